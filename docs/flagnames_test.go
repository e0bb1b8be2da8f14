package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// flagInText is a flag name in text: "--" after the start or a character
// that ends a word, before a letter, a verb ("--%s") or the end (", --"
// joined in front of names).
var flagInText = regexp.MustCompile(`(^|[^\w-])--([a-z%]|$)`)

// oneArgument is a literal that is a single command-line argument: a
// flag ("--tasks", "--include=a,b"), or "--" that ends the flags. Such a
// literal is a word of a command line the harness starts (chaos run of a
// matrix cell, a worker, the register, etcd, mmdebstrap) or looks for in
// one, never text for the user.
var oneArgument = regexp.MustCompile(`^--([a-z][a-z0-9-]*(=.*)?)?$`)

// flagNameAllowed are the phrases of string literals below cmd/ that
// name a flag and still are no message of the harness, by file: the
// phrase is cut out of the literal before it is looked at.
var flagNameAllowed = map[string][]string{
	// An exec: subject of the matrix: a worker's command line
	// (chaos-worker's own flag, docs/worker-protocol.md), not text.
	"run/matrix/cells.go": {" --recipe seed"},
	// The image's entrypoint script, in a comment of its own: docker
	// run's flag, not chaos's.
	"cluster/docker/image/scripts.go": {"run it with --user to drop root"},
}

// TestNoFlagNamesBelowCmd: no string literal of a non-test file below
// cmd/ names a flag in text. The flags are cmd/chaos's: a message of a
// package below names a setting with setting.Name, which says the flag
// when cmd/chaos registered it, so a package's text cannot drift from the
// command's flags, and the same package serves another command. Comments
// are not looked at: they may explain what the command does.
func TestNoFlagNamesBelowCmd(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(must(filepath.Rel(root, path)))
		if d.IsDir() {
			if belowCmd(rel) {
				return nil
			}
			return filepath.SkipDir
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, lit := range flagLiterals(f, flagNameAllowed[rel]) {
			t.Errorf("%s: a flag name in a string literal: %s (name the setting with setting.Name)", fset.Position(lit.Pos()), lit.Value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// belowCmd says whether the folder rel is walked: every folder of the
// module but cmd/ (the flags' owner), the tests (which run the command),
// docs/, compose/, internal/testkit (test-only) and hidden ones.
func belowCmd(rel string) bool {
	if rel == "." {
		return true
	}
	switch rel {
	case "cmd", "tests", "docs", "compose", "internal/testkit", "bin", "results", "man":
		return false
	}
	return !strings.HasPrefix(filepath.Base(rel), ".")
}

// flagLiterals are f's string literals that name a flag in text, but for
// the allowed ones.
func flagLiterals(f *ast.File, allowed []string) []*ast.BasicLit {
	var out []*ast.BasicLit
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil || oneArgument.MatchString(strings.TrimSpace(s)) {
			return true
		}
		for _, a := range allowed {
			s = strings.ReplaceAll(s, a, "")
		}
		if flagInText.MatchString(s) {
			out = append(out, lit)
		}
		return true
	})
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestFlagLiteralsFinds: the check finds a flag in a message, a raw
// string, a verb and a joined list, and passes comments, single
// arguments and an allowed phrase.
func TestFlagLiteralsFinds(t *testing.T) {
	src := "package p\n\n" +
		"// A comment may say --net netns.\n" +
		"var (\n" +
		"\tmsg    = \"needs --net netns\"\n" +
		"\traw    = `use --cluster local`\n" +
		"\tverb   = \"--%s: only with ssh\"\n" +
		"\tjoined = \", --\"\n" +
		"\targs   = []string{\"--tasks\", \"1000\", \"--include=a,b\", \"--\", \"--register \"}\n" +
		"\tok     = \"exec:x worker --recipe seed\"\n" +
		"\tdashes = \"-rw-r--r-- and a--b\"\n" +
		")\n"
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, lit := range flagLiterals(f, []string{" worker --recipe seed"}) {
		got = append(got, lit.Value)
	}
	want := []string{`"needs --net netns"`, "`use --cluster local`", `"--%s: only with ssh"`, `", --"`}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("found %q, want %q", got, want)
	}
}
