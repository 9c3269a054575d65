package tvsm_test

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository stands on its own: comments, docs and strings state facts
// or cite public sources by URL, never documents, sections or tracker
// entries that live elsewhere. The patterns are assembled from pieces so
// that this file does not match itself.
var (
	section = "\u00a7" // the section sign
	// outsideReferences name the kinds of reference that point outside.
	outsideReferences = []struct {
		what string
		re   *regexp.Regexp
	}{
		{"the design document", regexp.MustCompile(`\bDES` + `IGN\b`)},
		{"the pitfalls list", regexp.MustCompile(`\bPIT` + `FALLS\b`)},
		{"a section of the specification", regexp.MustCompile(`(?i)\bspec(ification)?('s)?\s*` + section)},
		{"a numbered section", regexp.MustCompile(section + `\s*\d`)},
		{"an issue number", regexp.MustCompile(`(?i)\biss` + `ues?\s*[-#]?\s*\d`)},
		{"the specification file", regexp.MustCompile(`service-` + `spec`)},
		{"a shared folder", regexp.MustCompile(`/work/` + `shared`)},
	}
	// publicSections are section references into public standards, which
	// are fine ("RFC 6455" followed by a section sign and a number); they
	// are cut out of a line before the patterns above are tried.
	publicSections = regexp.MustCompile(`\bRFC\s*\d+,?\s*` + section + `\s*[\d.]*\d`)
)

// pendingReferences excuse lines that still hold an outside reference and
// are being rewritten elsewhere: path, then a fragment of the line ("" for
// every line of the file). The test fails when an entry excuses nothing,
// so the list only shrinks; a new entry needs a reason.
var pendingReferences = map[[2]string]string{}

// skippedDirs hold third-party files, kept as their authors wrote them.
var skippedDirs = []string{"httpapi/apidoc/swagger-ui/"}

// TestNoOutsideReferences reads every tracked text file and names each line
// that cites something outside the repository.
func TestNoOutsideReferences(t *testing.T) {
	files := trackedFiles(t)
	if len(files) < 50 {
		t.Fatalf("found %d files; the check would prove nothing", len(files))
	}
	used := map[[2]string]bool{}
	for _, path := range files {
		if skipped(path) {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary
		}
		for _, hit := range outsideReferencesIn(data) {
			if key, ok := pending(path, hit.line); ok {
				used[key] = true
				continue
			}
			t.Errorf("%s:%d cites %s: %s", path, hit.number, hit.what, strings.TrimSpace(hit.line))
		}
	}
	for key, why := range pendingReferences {
		if !used[key] {
			t.Errorf("pendingReferences entry %q (%s) excuses nothing now: remove it", key, why)
		}
	}
}

// referenceHit is one line that cites something outside.
type referenceHit struct {
	number int
	line   string
	what   string
}

// outsideReferencesIn returns the lines of data that cite something
// outside the repository, with what each cites first.
func outsideReferencesIn(data []byte) []referenceHit {
	if !mayCite(data) {
		return nil
	}
	var hits []referenceHit
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if !mayCite(sc.Bytes()) {
			continue
		}
		line := sc.Text()
		rest := publicSections.ReplaceAllString(line, "")
		for _, r := range outsideReferences {
			if r.re.MatchString(rest) {
				hits = append(hits, referenceHit{number: n, line: line, what: r.what})
				break
			}
		}
	}
	return hits
}

// citeWords are words, lower case, of which every pattern of
// outsideReferences needs one: text without any of them cites nothing, and
// the regular expressions, slow on the whole tree, need not run on it.
var citeWords = [][]byte{[]byte("des" + "ign"), []byte("pit" + "falls"), []byte(section), []byte("iss" + "ue"), []byte("service-" + "spec"), []byte("/work/" + "shared")}

// mayCite reports whether text holds one of citeWords, in any case.
func mayCite(text []byte) bool {
	lower := bytes.ToLower(text)
	for _, w := range citeWords {
		if bytes.Contains(lower, w) {
			return true
		}
	}
	return false
}

// pending returns the pendingReferences entry that excuses line of path.
func pending(path, line string) ([2]string, bool) {
	for key := range pendingReferences {
		if key[0] == path && strings.Contains(line, key[1]) {
			return key, true
		}
	}
	return [2]string{}, false
}

func skipped(path string) bool {
	for _, dir := range skippedDirs {
		if strings.HasPrefix(path, dir) {
			return true
		}
	}
	return false
}

// trackedFiles returns the files git tracks, relative to the module root
// (this test's directory), or, outside a git checkout, every file below it
// but those in hidden directories and testdata.
func trackedFiles(t *testing.T) []string {
	if out, err := exec.Command("git", "ls-files", "-z").Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestOutsideReferencesOnMadeUpLines checks the patterns on lines written
// for the purpose.
func TestOutsideReferencesOnMadeUpLines(t *testing.T) {
	cited := []string{
		"// Protocol (" + "DES" + "IGN.md " + section + "5).",
		"// see " + "DES" + "IGN " + section + "6",
		"// (" + "PIT" + "FALLS 21)",
		"// the account fields (spec " + section + "2.1)",
		"// Spec " + section + "8 recommends",
		"// the limits of " + section + "8",
		"## Read model — " + "iss" + "ue 3",
		"// part of " + "Iss" + "ue-2",
		"// fixed in " + "iss" + "ue #12",
		"// see service-" + "spec.md",
		"// RFC 6455 " + section + "7.4.2, then " + "spe" + "c " + section + "2.5",
	}
	for _, line := range cited {
		if len(outsideReferencesIn([]byte(line))) != 1 {
			t.Errorf("not flagged: %s", line)
		}
	}
	fine := []string{
		"// Application close codes (the 4000–4999 range of RFC 6455 " + section + "7.4.2).",
		"// A UUIDv5 (RFC 4122 " + section + "4.3) of namespace",
		"// batches are tied to their connection: https://github.com/ClickHouse/clickhouse-go/" + "iss" + "ues/728",
		"// the design of the hub; pitfalls of batching",
		"// ListSpec is what one list endpoint accepts",
		"// an issue with the driver",
	}
	for _, line := range fine {
		if hits := outsideReferencesIn([]byte(line)); len(hits) != 0 {
			t.Errorf("flagged as %s: %s", hits[0].what, line)
		}
	}
}
