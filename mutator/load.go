package main

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Package is the server package, parsed and type-checked.
type Package struct {
	fset   *token.FileSet
	dir    string
	files  map[string]*ast.File // by path relative to the module ("server/sublist.go")
	source map[string][]byte
	info   *types.Info
}

func (p *Package) file(path string) *ast.File { return p.files[path] }

// loadPackage parses the package's files that build on linux/amd64 without cgo (the binary the
// campaign runs) and type-checks them. Imports are type-checked from source; one that cannot be
// (none should) is an empty package, whose expressions then have no type and are left unmutated.
func loadPackage(dir string) (*Package, error) {
	context := build.Default
	context.GOOS, context.GOARCH, context.CgoEnabled = "linux", "amd64", false
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := &Package{
		fset:   token.NewFileSet(),
		dir:    dir,
		files:  map[string]*ast.File{},
		source: map[string][]byte{},
		info: &types.Info{
			Types: map[ast.Expr]types.TypeAndValue{},
			Defs:  map[*ast.Ident]types.Object{},
			Uses:  map[*ast.Ident]types.Object{},
		},
	}
	var parsed []*ast.File
	names := []string{}
	for _, entry := range entries {
		names = append(names, entry.Name())
	}
	sort.Strings(names)
	for _, name := range names {
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := context.MatchFile(dir, name); err != nil || !ok {
			continue
		}
		path := filepath.Join(dir, name)
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		file, err := parser.ParseFile(p.fset, path, text, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		key := "server/" + name
		p.files[key], p.source[key] = file, text
		parsed = append(parsed, file)
	}
	if len(parsed) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	config := types.Config{
		Importer: lenient{importer.ForCompiler(p.fset, "source", nil).(types.ImporterFrom)},
		Error:    func(error) {}, // keep going: what has no type is not mutated
	}
	_, _ = config.Check("github.com/nats-io/nats-server/v2/server", p.fset, parsed, p.info)
	return p, nil
}

// lenient imports from source, and gives an empty package for an import it cannot read.
type lenient struct{ inner types.ImporterFrom }

func (l lenient) Import(path string) (*types.Package, error) { return l.ImportFrom(path, "", 0) }

func (l lenient) ImportFrom(path, dir string, mode types.ImportMode) (*types.Package, error) {
	pkg, err := l.inner.ImportFrom(path, dir, mode)
	if err == nil {
		return pkg, nil
	}
	fake := types.NewPackage(path, filepath.Base(path))
	fake.MarkComplete()
	return fake, nil
}
