package chaostest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestParallelBeforeToken: a test that takes a run token and then calls
// t.Parallel pauses holding it until the package's serial tests end, and
// a serial test that waits for that token never ends: the package hangs
// until go test's timeout. So in every test file of the module, t.Parallel
// must come before any call that takes a token: NeedEnsemble and the
// Need* that call it, or a helper of the package that calls one of them.
func TestParallelBeforeToken(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string][]*ast.File{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		pkgs[filepath.Dir(path)] = append(pkgs[filepath.Dir(path)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, files := range pkgs {
		takers := tokenTakers(files)
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				var body *ast.BlockStmt
				switch fn := n.(type) {
				case *ast.FuncDecl:
					body = fn.Body
				case *ast.FuncLit:
					body = fn.Body
				}
				if body == nil {
					return true
				}
				checked++
				if at := parallelAfterToken(body, takers); at.IsValid() {
					t.Errorf("%s: t.Parallel after a call that takes a run token: call t.Parallel first", fset.Position(at))
				}
				return true
			})
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d function bodies under %s", checked, root)
	}
}

// tokenTakers are the names of the calls that take a run token in a
// package: chaostest's Need* (and dockertest.Need) and, to a fixed point, the package's own
// functions whose bodies call one of them.
func tokenTakers(files []*ast.File) map[string]bool {
	takers := map[string]bool{"NeedEnsemble": true, "NeedEnsembles": true, "NeedNetns": true, "Need": true, "NewSSHRig": true}
	for grew := true; grew; {
		grew = false
		for _, f := range files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil || takers[fn.Name.Name] || strings.HasPrefix(fn.Name.Name, "Test") {
					continue
				}
				if firstCall(fn.Body, takers).IsValid() {
					takers[fn.Name.Name], grew = true, true
				}
			}
		}
	}
	return takers
}

// parallelAfterToken is the position of a t.Parallel call in body (not in
// a nested function) that follows a call of a taker, or NoPos.
func parallelAfterToken(body *ast.BlockStmt, takers map[string]bool) token.Pos {
	taken := firstCall(body, takers)
	if !taken.IsValid() {
		return token.NoPos
	}
	var at token.Pos
	walkOwn(body, func(c *ast.CallExpr) {
		if name(c) == "Parallel" && c.Pos() > taken && !at.IsValid() {
			at = c.Pos()
		}
	})
	return at
}

// firstCall is the position of the first call in body (not in a nested
// function) whose name is in names, or NoPos.
func firstCall(body *ast.BlockStmt, names map[string]bool) token.Pos {
	var at token.Pos
	walkOwn(body, func(c *ast.CallExpr) {
		if names[name(c)] && (!at.IsValid() || c.Pos() < at) {
			at = c.Pos()
		}
	})
	return at
}

// walkOwn calls f on every call in body outside nested function literals,
// whose bodies run on their own (a subtest, a goroutine).
func walkOwn(body *ast.BlockStmt, f func(*ast.CallExpr)) {
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			f(n)
		}
		return true
	})
}

// name is the called function's or method's own name.
func name(c *ast.CallExpr) string {
	switch fn := c.Fun.(type) {
	case *ast.Ident:
		return fn.Name
	case *ast.SelectorExpr:
		return fn.Sel.Name
	}
	return ""
}
