package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// requestGoroutines are the only functions of the package that may start a
// goroutine, each on behalf of the request it serves; background loops
// belong to the composition root (package server), never to the API.
var requestGoroutines = []string{
	"(*API).touchKey",     // a key's last-used time, written after the request (bounded by touchSlots)
	"(*lingerConn).Close", // linger.go: drains what a client still sends after its answer
}

// TestAPIStartsNoBackgroundWork: New and every other function of the
// package start no goroutine, but those listed in requestGoroutines.
func TestAPIStartsNoBackgroundWork(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var found []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				starts := false
				switch n := n.(type) {
				case *ast.GoStmt:
					starts = true
				case *ast.CallExpr: // sync.WaitGroup.Go, errgroup.Group.Go
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Go" {
						starts = true
					}
				}
				if starts {
					found = append(found, funcName(fn))
					if !slices.Contains(requestGoroutines, funcName(fn)) {
						t.Errorf("%s: %s starts a goroutine; a background loop is a module of package server", fset.Position(n.Pos()), funcName(fn))
					}
				}
				return true
			})
		}
	}
	for _, want := range requestGoroutines {
		if !slices.Contains(found, want) {
			t.Errorf("%s is listed in requestGoroutines but starts none: remove it from the list", want)
		}
	}
}

// funcName is a declaration's name, "(*T).M" for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	var recv string
	switch t := fn.Recv.List[0].Type.(type) {
	case *ast.StarExpr:
		if id, ok := t.X.(*ast.Ident); ok {
			recv = "(*" + id.Name + ")"
		}
	case *ast.Ident:
		recv = t.Name
	}
	return recv + "." + fn.Name.Name
}
