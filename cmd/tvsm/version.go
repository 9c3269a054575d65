package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at link time by the Makefile:
//
//	go build -ldflags "-X main.version=$(git describe --always --dirty)"
var version string

// versionString is the version this binary reports: the link-time one, else
// the module version `go install` records, else "dev".
func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// printVersion writes the version, the Go toolchain and platform, and the
// VCS revision when the build recorded one (-buildvcs).
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "tvsm %s\n", versionString())
	fmt.Fprintf(w, "go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	if vcs["vcs.revision"] == "" {
		return
	}
	line := fmt.Sprintf("vcs: %s %s", vcs["vcs"], vcs["vcs.revision"])
	if t := vcs["vcs.time"]; t != "" {
		line += " " + t
	}
	if vcs["vcs.modified"] == "true" {
		line += " (modified)"
	}
	fmt.Fprintln(w, line)
}
