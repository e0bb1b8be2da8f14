// Package docs holds the project's documentation. Its tests keep the
// references into it from rotting: every place in the repository that
// points at a doc (a file, a heading, an anchor) must find it, and no
// text cites what a reader of the repository cannot open.
package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, one folder up from this package.
const root = ".."

// sources are the files whose text may point into docs/.
func sources(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") && name != ".ci" || name == "bin" || name == "results" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".md", ".java", ".py", ".sh":
			out = append(out, path)
		default:
			if name == "Makefile" || name == "run" && filepath.Base(filepath.Dir(path)) == ".ci" {
				out = append(out, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// headings reads a Markdown file's headings (outside code blocks).
func headings(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	fenced := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced && strings.HasPrefix(line, "#") {
			out = append(out, strings.TrimSpace(strings.TrimLeft(line, "#")))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// slug is GitHub's anchor for a heading: lower case, punctuation other
// than '-' and '_' dropped, spaces to '-'.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	// docs/x.md#anchor
	anchorRef = regexp.MustCompile(`docs/([a-z-]+\.md)#([a-z0-9_-]+)`)
	// docs/x.md, "Heading" / docs/x.md ("Heading") / docs/x.md "Heading"
	headingRef = regexp.MustCompile(`docs/([a-z-]+\.md),? \(?(?:\\)?"([^"\\]+)`)
	// docs/x.md alone
	fileRef = regexp.MustCompile(`docs/([a-z-]+\.md)`)
)

// TestReferencesResolve: every doc a file names exists, and so does the
// heading or anchor it names in it.
func TestReferencesResolve(t *testing.T) {
	anchors := map[string][]string{}
	titles := map[string][]string{}
	for _, s := range sources(t) {
		if strings.HasSuffix(s, "links_test.go") {
			continue
		}
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		// A comment may wrap between a file name and its heading.
		text := regexp.MustCompile(`\n\s*(//|#)?\s*`).ReplaceAllString(string(data), " ")
		for _, m := range fileRef.FindAllStringSubmatch(text, -1) {
			if _, err := os.Stat(m[1]); err != nil {
				t.Errorf("%s names docs/%s, which does not exist", s, m[1])
				continue
			}
			if titles[m[1]] == nil {
				titles[m[1]] = headings(t, m[1])
				for _, h := range titles[m[1]] {
					anchors[m[1]] = append(anchors[m[1]], slug(h))
				}
			}
		}
		for _, m := range anchorRef.FindAllStringSubmatch(text, -1) {
			if titles[m[1]] != nil && !slices.Contains(anchors[m[1]], m[2]) {
				t.Errorf("%s points at docs/%s#%s: no such heading", s, m[1], m[2])
			}
		}
		for _, m := range headingRef.FindAllStringSubmatch(text, -1) {
			if titles[m[1]] == nil {
				continue
			}
			want := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(m[2]), "`", ""))
			if !slices.ContainsFunc(titles[m[1]], func(h string) bool { return strings.HasPrefix(strings.ToLower(strings.ReplaceAll(h, "`", "")), want) }) {
				t.Errorf("%s points at docs/%s, %q: no such heading", s, m[1], want)
			}
		}
	}
}

// TestMarkdownLinksResolve: every relative link of a doc or the README
// names a file of the repository (and, with #anchor, a heading of it).
func TestMarkdownLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#\s]*)(#[^)\s]*)?\)`)
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target, anchor := m[1], strings.TrimPrefix(m[2], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path := filepath.Join(filepath.Dir(f), target)
			if target == "" {
				path = f
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s: %v", f, target, err)
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") {
				var slugs []string
				for _, h := range headings(t, path) {
					slugs = append(slugs, slug(h))
				}
				if !slices.Contains(slugs, anchor) {
					t.Errorf("%s links to %s#%s: no such heading", f, target, anchor)
				}
			}
		}
	}
}

// TestNoCitationsOfAbsentTexts: code and docs cite only what is in the
// repository. Issue numbers and sections of background texts that live
// elsewhere mean nothing to a reader of the repository; background goes
// in docs/background.md, in English.
func TestNoCitationsOfAbsentTexts(t *testing.T) {
	cite := regexp.MustCompile(`issue [0-9]|seed 0{3}|\(seed [0-9]|seed [0-9]+[:,)]|seed [0-9]+ section`)
	han := regexp.MustCompile(`\p{Han}`)
	for _, s := range sources(t) {
		if strings.HasSuffix(s, "links_test.go") {
			continue
		}
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if cite.MatchString(strings.ReplaceAll(line, "--seed", "")) {
				t.Errorf("%s:%d cites a text not in the repository: %s", s, i+1, strings.TrimSpace(line))
			}
			if han.MatchString(line) {
				t.Errorf("%s:%d is not in English: %s", s, i+1, strings.TrimSpace(line))
			}
		}
	}
}
