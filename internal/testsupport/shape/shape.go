// Package shape checks the size of a package's code in its own tests: no function body over
// a number of lines, no type with more than a number of methods, no file over a number of
// lines. Sizes drift one change at a
// time; a test catches the change that crosses the line.
package shape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Limits are the sizes Check allows.
type Limits struct {
	FuncLines int // lines of a function body, braces included
	Methods   int // methods declared on one type (pointer or value receiver)
	FileLines int // lines of a non-test file; 0: not checked
}

// Default are the limits of the project's style: 80 lines, about 15 methods, 500 lines.
var Default = Limits{FuncLines: 80, Methods: 15, FileLines: 500}

// Check fails t for every function of the package in dir (its non-test .go files) over
// l.FuncLines, every type with more than l.Methods methods and every file over l.FileLines.
func Check(t testing.TB, dir string, l Limits) {
	t.Helper()
	fset := token.NewFileSet()
	methods := map[string]int{}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s (%v)", dir, err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if n := fset.File(f.Pos()).LineCount(); l.FileLines > 0 && n > l.FileLines {
			t.Errorf("%s is %d lines long (at most %d)", name, n, l.FileLines)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			lines := fset.Position(fd.Body.End()).Line - fset.Position(fd.Body.Pos()).Line + 1
			if lines > l.FuncLines {
				t.Errorf("%s: %s is %d lines long (at most %d)", fset.Position(fd.Pos()), fd.Name.Name, lines, l.FuncLines)
			}
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				methods[receiver(fd.Recv.List[0].Type)]++
			}
		}
	}
	for typ, n := range methods {
		if n > l.Methods {
			t.Errorf("%s: type %s has %d methods (at most %d)", dir, typ, n, l.Methods)
		}
	}
}

// receiver is the type name of a receiver: T of T, *T, T[P] and *T[P].
func receiver(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}

// CheckTree runs Check on root and every directory under it that holds a non-test Go file
// (testdata excluded), each as a subtest named by its path.
func CheckTree(t *testing.T, root string, l Limits) {
	t.Helper()
	dirs := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dirs[filepath.Dir(path)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatalf("no Go package under %s", root)
	}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		t.Run(filepath.ToSlash(dir), func(t *testing.T) { Check(t, dir, l) })
	}
}
