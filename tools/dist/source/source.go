// Package source reads what a release build needs from its git checkout:
// the commit, the commit's time, whether the tree has changes not committed,
// and the nearest release tag, and makes the release's default version of
// them.
//
// Releases of relayr are tagged apps/relayr/vX.Y.Z, as Go names the tags of
// a module in the repository's apps/relayr folder, so that `go install
// github.com/relayr-go/relayr/apps/relayr@vX.Y.Z` finds them. The default
// version is what the go command calls the commit:
//
//   - a commit tagged apps/relayr/v0.4.0 is v0.4.0;
//   - a later commit is the pseudo-version after the nearest tag,
//     v0.4.1-0.20261204171116-daac671aad38 (after v0.4.0-rc.1:
//     v0.4.0-rc.1.0.20261204171116-daac671aad38);
//   - a commit with no tag behind it is v0.0.0-20261204171116-daac671aad38;
//
// each with +dirty when the tree has changes not committed, as Go stamps a
// module built from such a tree. Pseudo-versions, not git describe's
// v0.4.0-3-gdaac671, because those sort before the tag they follow, where a
// pseudo-version sorts after it, and because Go's tools read them.
package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// TagPrefix is the prefix of relayr's release tags.
const TagPrefix = "apps/relayr/"

// Source is the commit a release is built from.
type Source struct {
	// Commit is the full hash of the commit checked out (HEAD).
	Commit string
	// Time is the commit's committer time.
	Time time.Time
	// Dirty says the tree has changes not committed (tracked or not,
	// ignored files aside, as `git status --porcelain` lists them).
	Dirty bool
	// Tag is the nearest release tag behind the commit, its prefix stripped
	// (v0.4.0), or empty when there is none.
	Tag string
	// Ahead is how many commits the commit is after Tag (0: Tag names it).
	Ahead int
}

// Read reads the Source of the git checkout at dir.
func Read(ctx context.Context, dir string) (Source, error) {
	var s Source
	out, err := git(ctx, dir, "log", "-1", "--format=%H %ct")
	if err != nil {
		return s, err
	}
	hash, secs, ok := strings.Cut(strings.TrimSpace(out), " ")
	unix, perr := strconv.ParseInt(secs, 10, 64)
	if !ok || perr != nil || len(hash) < 12 {
		return s, fmt.Errorf("source: git log: %q: want a hash and a time", out)
	}
	s.Commit, s.Time = hash, time.Unix(unix, 0).UTC()
	status, err := git(ctx, dir, "status", "--porcelain")
	if err != nil {
		return s, err
	}
	s.Dirty = strings.TrimSpace(status) != ""
	described, err := git(ctx, dir, "describe", "--tags", "--long", "--match", TagPrefix+"v*", "HEAD")
	if err != nil {
		if isNoTag(err) {
			return s, nil
		}
		return s, err
	}
	s.Tag, s.Ahead, err = parseDescribe(strings.TrimSpace(described))
	return s, err
}

// Version is the release's default version (the package comment says
// which).
func (s Source) Version() string {
	v := s.pseudo()
	if s.Tag != "" && s.Ahead == 0 {
		v = s.Tag
	}
	if s.Dirty {
		v += "+dirty"
	}
	return v
}

// pseudo is the Go pseudo-version of the commit, after Tag.
func (s Source) pseudo() string {
	rev := s.Commit[:min(12, len(s.Commit))]
	stamp := s.Time.UTC().Format("20060102150405") + "-" + rev
	if s.Tag == "" {
		return "v0.0.0-" + stamp
	}
	m := semverRE.FindStringSubmatch(s.Tag)
	if m[4] != "" { // a prerelease: v0.4.0-rc.1 → v0.4.0-rc.1.0.<stamp>
		return "v" + m[1] + "." + m[2] + "." + m[3] + "-" + m[4] + ".0." + stamp
	}
	patch, _ := strconv.Atoi(m[3])
	return "v" + m[1] + "." + m[2] + "." + strconv.Itoa(patch+1) + "-0." + stamp
}

// Epoch is the time a release's files carry: SOURCE_DATE_EPOCH (Unix
// seconds) when the environment sets it, else the commit's time.
func (s Source) Epoch() (time.Time, error) {
	env, ok := os.LookupEnv("SOURCE_DATE_EPOCH")
	if !ok || env == "" {
		return s.Time, nil
	}
	secs, err := strconv.ParseInt(env, 10, 64)
	if err != nil || secs < 0 {
		return time.Time{}, fmt.Errorf("source: SOURCE_DATE_EPOCH=%q: want Unix seconds", env)
	}
	return time.Unix(secs, 0).UTC(), nil
}

// semverRE matches a release tag's version: vMAJOR.MINOR.PATCH with an
// optional prerelease and build metadata, without leading zeros.
var semverRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)` +
	`(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?$`)

// parseDescribe reads `git describe --long`'s apps/relayr/v0.4.0-3-gdaac671
// as v0.4.0 and 3, refusing a tag that is not a semantic version.
func parseDescribe(d string) (string, int, error) {
	rest, ok := strings.CutPrefix(d, TagPrefix)
	i := strings.LastIndex(rest, "-g")
	j := strings.LastIndex(rest[:max(i, 0)], "-")
	if !ok || i < 0 || j < 0 {
		return "", 0, fmt.Errorf("source: git describe: %q: want %s<version>-<n>-g<hash>", d, TagPrefix)
	}
	ahead, err := strconv.Atoi(rest[j+1 : i])
	if err != nil || ahead < 0 {
		return "", 0, fmt.Errorf("source: git describe: %q: want %s<version>-<n>-g<hash>", d, TagPrefix)
	}
	tag := rest[:j]
	if !semverRE.MatchString(tag) {
		return "", 0, fmt.Errorf("source: tag %s%s: want a semantic version (v1.2.3)", TagPrefix, tag)
	}
	if plus := strings.IndexByte(tag, '+'); plus >= 0 {
		tag = tag[:plus]
	}
	return tag, ahead, nil
}

// errNoTag is git describe finding no release tag behind the commit.
var errNoTag = errors.New("no release tag")

func isNoTag(err error) bool { return errors.Is(err, errNoTag) }

// git runs git in dir and answers its standard output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...) //nolint:gosec // G204: git, with this package's own arguments
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C") // git's messages, read below, in English
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if args[0] == "describe" && (strings.Contains(msg, "No names found") || strings.Contains(msg, "No tags can describe")) {
			return "", errNoTag
		}
		return "", fmt.Errorf("source: git %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return stdout.String(), nil
}
