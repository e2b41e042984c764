// Command modproxy lays out modules of this repository as a file-system
// module proxy (the layout GOPROXY=file://DIR reads: DIR/<module>/@v/list,
// <version>.info, .mod and .zip), so that the go command can install them
// as a user would, before any tag is pushed. It prints the go.sum lines of
// what it wrote.
//
// Usage:
//
//	modproxy -o DIR -version V [-rev REV] [-repo ROOT] MODDIR...
//
// Each MODDIR is a directory of the repository holding a go.mod ("." for the
// root module). With -rev, a module's files are those committed at REV, taken
// by git archive as the module proxies take them from a tag; without it, the
// files on disk (untracked ones included: for development only). Files in
// subdirectories that hold a go.mod of their own are left out, as in any
// module zip.
//
// The scripts under scripts/ use it: the release (to prove installation and
// to write the go.sum lines of the modules it releases) and tidy.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

func main() {
	out := flag.String("o", "", "proxy directory to write (created if missing; other modules and versions in it are kept)")
	version := flag.String("version", "", "version to give every module, e.g. v0.1.0")
	rev := flag.String("rev", "", "git revision to take the files from (default: the files on disk)")
	repo := flag.String("repo", ".", "root of the git repository")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: modproxy -o DIR -version V [-rev REV] [-repo ROOT] MODDIR...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || *version == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if !semver.IsValid(*version) || semver.Canonical(*version) != *version || semver.Build(*version) != "" {
		fatalf("version %q is not a canonical semantic version such as v0.1.0", *version)
	}
	root, err := filepath.Abs(*repo)
	if err != nil {
		fatalf("%v", err)
	}
	for _, dir := range flag.Args() {
		if err := write(root, filepath.ToSlash(filepath.Clean(dir)), *rev, *version, *out); err != nil {
			fatalf("%s: %v", dir, err)
		}
	}
}

// write adds the module in subdir of root at version to the proxy in out
// and prints its go.sum lines.
func write(root, subdir, rev, version, out string) error {
	var gomod []byte
	var when time.Time
	var err error
	if rev != "" {
		gomod, err = git(root, "show", rev+":"+path.Join(subdir, "go.mod"))
		if err != nil {
			return err
		}
		stamp, err := git(root, "log", "-1", "--format=%cI", rev)
		if err != nil {
			return err
		}
		if when, err = time.Parse(time.RFC3339, strings.TrimSpace(string(stamp))); err != nil {
			return err
		}
	} else {
		if gomod, err = os.ReadFile(filepath.Join(root, subdir, "go.mod")); err != nil {
			return err
		}
		when = time.Now()
	}
	modPath := modfile.ModulePath(gomod)
	if modPath == "" {
		return fmt.Errorf("no module line in go.mod")
	}
	escaped, err := module.EscapePath(modPath)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m := module.Version{Path: modPath, Version: version}
	zipName := filepath.Join(dir, version+".zip")
	f, err := os.Create(zipName)
	if err != nil {
		return err
	}
	if rev != "" {
		sub := subdir
		if sub == "." {
			sub = ""
		}
		err = zip.CreateFromVCS(f, m, root, rev, sub)
	} else {
		err = zip.CreateFromDir(f, m, filepath.Join(root, subdir))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, when.UTC()})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".info"), info, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".mod"), gomod, 0o644); err != nil {
		return err
	}
	if err := addToList(filepath.Join(dir, "list"), version); err != nil {
		return err
	}
	zipSum, err := dirhash.HashZip(zipName, dirhash.Hash1)
	if err != nil {
		return err
	}
	modSum, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gomod)), nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s\n%s %s/go.mod %s\n", modPath, version, zipSum, modPath, version, modSum)
	return nil
}

// addToList adds version to the proxy's list file of a module, once.
func addToList(name, version string) error {
	data, err := os.ReadFile(name)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	versions := strings.Fields(string(data))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	semver.Sort(versions)
	return os.WriteFile(name, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

func git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "modproxy: "+format+"\n", args...)
	os.Exit(1)
}
