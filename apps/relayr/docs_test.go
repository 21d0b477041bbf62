package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The repository's documentation holds together: every relative link in
// README.md and docs/ leads to a file of the repository (and a heading of
// it, where it names one), and nothing in the code or the docs points
// outside the repository (a shared/ path, an issue number of a tracker a
// clone cannot see).
func TestTheDocsLinksResolveAndNothingPointsOutside(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{filepath.Join(root, "README.md")}
	if err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		body, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for _, m := range link.FindAllStringSubmatch(stripCode(string(body)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links %s: no such file", rel, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[anchor] {
				t.Errorf("%s links %s: no such heading", rel, target)
			}
		}
	}
	outside := regexp.MustCompile(`shared/(seeds|trackers|DESIGN)|[Ii]ssue [0-9]`)
	if err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || (!strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".md")) {
			return nil
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if loc := outside.FindIndex(body); loc != nil {
			rel, _ := filepath.Rel(root, p)
			t.Errorf("%s points outside the repository: %q", rel, body[loc[0]:loc[1]])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// stripCode drops fenced code blocks, whose brackets are no links.
func stripCode(s string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// anchors are a page's headings as GitHub names them: lower case, spaces
// as hyphens, punctuation but hyphens and underscores dropped, a repeated
// one numbered.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	out := map[string]bool{}
	seen := map[string]int{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
		}
		if in || !strings.HasPrefix(line, "#") {
			continue
		}
		slug := slug(strings.TrimLeft(line, "# "))
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// slug is a heading's GitHub anchor.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && !strings.ContainsRune("—–…’“”", r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
