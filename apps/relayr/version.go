package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// release is the release a build names itself, set by a release build
// (-ldflags "-X main.release=v0.4.0") where the module's own version is not
// in the build info (a build from a checkout). Empty, the build info says.
var release string

// buildVersion is what `relayr version` answers: the release, the commit
// and its time, whether the tree had changes not committed, and the Go
// that built it.
type buildVersion struct {
	Release  string `json:"release"`
	Commit   string `json:"commit,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// readVersion reads a build's version from its build info: the module's
// version where `go install …@v0.4.0` set it, else the release the build
// was given (-X main.release), else "devel"; the VCS stamp's commit, time
// and modified flag where the build had them.
func readVersion(info *debug.BuildInfo, ok bool, given string) buildVersion {
	v := buildVersion{Release: "devel", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok || info == nil {
		if given != "" {
			v.Release = given
		}
		return v
	}
	if info.GoVersion != "" {
		v.Go = info.GoVersion
	}
	switch mv := info.Main.Version; {
	case given != "":
		v.Release = given
	case mv != "" && mv != "(devel)":
		v.Release = mv
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "GOOS":
			v.Platform = s.Value + v.Platform[strings.IndexByte(v.Platform, '/'):]
		case "GOARCH":
			v.Platform = v.Platform[:strings.IndexByte(v.Platform, '/')+1] + s.Value
		}
	}
	return v
}

// String is the version on one line: "relayr v0.4.0 (commit 1a2b3c4d5e6f,
// 2026-12-04T12:00:00Z, modified) go1.26.8 linux/amd64".
func (v buildVersion) String() string {
	var b strings.Builder
	b.WriteString("relayr " + v.Release)
	var stamp []string
	if v.Commit != "" {
		stamp = append(stamp, "commit "+v.Commit[:min(len(v.Commit), 12)])
	}
	if v.Time != "" {
		stamp = append(stamp, v.Time)
	}
	if v.Modified {
		stamp = append(stamp, "modified")
	}
	if len(stamp) > 0 {
		b.WriteString(" (" + strings.Join(stamp, ", ") + ")")
	}
	b.WriteString(" " + v.Go + " " + v.Platform)
	return b.String()
}

func currentVersion() buildVersion {
	info, ok := debug.ReadBuildInfo()
	return readVersion(info, ok, release)
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flags("version", "print the release, the commit and the Go version relayr was built from", stderr)
	asJSON := fs.Bool("json", false, "print it as a JSON object")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	v := currentVersion()
	if *asJSON {
		b, err := json.Marshal(v)
		if err != nil {
			fmt.Fprintln(stderr, "relayr version:", err)
			return exitFail
		}
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	fmt.Fprintln(stdout, v)
	return exitOK
}
