// Builds the console into httpapi/console/dist, which the tvsm binary
// embeds and serves at /admin/ (see httpapi/console).
import { defineConfig } from 'vite'

export default defineConfig({
  base: '/admin/',
  build: {
    outDir: '../../httpapi/console/dist',
    emptyOutDir: true,
    // Browsers of the last few years; no legacy bundle.
    target: 'es2022',
    // One small page: no source maps in the binary.
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: {
    // npm run dev: the page on Vite's server, the APIs on a local node.
    proxy: { '/api': process.env.TVSM_URL || 'http://127.0.0.1:8080' },
  },
})
