// Package staticfiles serves static files embedded in the binary (Swagger UI,
// the admin console): a file may be stored gzip-compressed as NAME.gz, and
// is then sent as it is to clients accepting gzip and expanded for the
// others.
package staticfiles

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// Files are the files of one directory of an embedded file system.
type Files struct {
	FS  fs.FS
	Dir string
	// Index is the file served for "" (default "index.html").
	Index string
}

// Open returns the file name ("" is the index): its content, its content
// type and whether the content is gzip-compressed. ok is false for unknown
// names, and for the .gz files themselves.
func (f Files) Open(name string) (content []byte, contentType string, gzipped, ok bool) {
	name = path.Clean("/" + name)[1:]
	if name == "" {
		name = f.Index
		if name == "" {
			name = "index.html"
		}
	}
	if strings.HasSuffix(name, ".gz") {
		return nil, "", false, false
	}
	contentType = mime.TypeByExtension(path.Ext(name))
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	if b, err := fs.ReadFile(f.FS, path.Join(f.Dir, name+".gz")); err == nil {
		return b, contentType, true, true
	}
	b, err := fs.ReadFile(f.FS, path.Join(f.Dir, name))
	if err != nil {
		return nil, "", false, false
	}
	return b, contentType, false, true
}

// Serve answers r with the file name and the Cache-Control header
// cacheControl, or 404.
func (f Files) Serve(w http.ResponseWriter, r *http.Request, name, cacheControl string) {
	content, contentType, gzipped, ok := f.Open(name)
	if !ok {
		http.NotFound(w, r)
		return
	}
	Write(w, r, content, contentType, gzipped, cacheControl)
}

// Write answers r with content (gzip-compressed when gzipped).
func Write(w http.ResponseWriter, r *http.Request, content []byte, contentType string, gzipped bool, cacheControl string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", cacheControl)
	h.Set("X-Content-Type-Options", "nosniff")
	if gzipped {
		h.Set("Vary", "Accept-Encoding")
		if AcceptsGzip(r) {
			h.Set("Content-Encoding", "gzip")
		} else if plain, ok := gunzip(content); ok {
			content = plain
		} else {
			http.Error(w, "corrupt asset", http.StatusInternalServerError)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(content)
	}
}

// Names lists the files Open serves (without .gz).
func (f Files) Names() []string {
	var names []string
	_ = fs.WalkDir(f.FS, f.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(p, f.Dir+"/"), ".gz"))
		}
		return nil
	})
	return names
}

// ContentSecurityPolicy is the policy of the pages tvsm serves, the admin
// console and Swagger UI: only the page's own files and the APIs of the
// same origin, no inline script, no other host, no framing. Styles may be
// inline: the console's chart library and Swagger UI set style attributes.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// SetPageHeaders sets the headers of a page tvsm serves on h: its
// ContentSecurityPolicy, no framing for browsers that predate
// frame-ancestors either (a page in another site's frame could be
// clicked through unawares), and no Referer to other hosts.
func SetPageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

// AcceptsGzip reports whether r's Accept-Encoding admits gzip.
func AcceptsGzip(r *http.Request) bool {
	for part := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(params, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

func gunzip(b []byte) ([]byte, bool) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, false
	}
	out, err := io.ReadAll(zr)
	return out, err == nil
}
