// Vite imports CSS files for their side effect.
declare module '*.css'
