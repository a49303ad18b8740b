package main

import (
	"io"
	"os"
	"os/exec"
)

// noEcho turns terminal echo off when in is an interactive terminal, so a
// typed password is not shown; ok is false (and nothing changes) when in is
// a pipe or a file, or stty is missing.
func noEcho(in io.Reader) (restore func(), ok bool) {
	f, isFile := in.(*os.File)
	if !isFile {
		return nil, false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil, false
	}
	stty := func(arg string) error {
		cmd := exec.Command("stty", arg)
		cmd.Stdin = f
		return cmd.Run()
	}
	if err := stty("-echo"); err != nil {
		return nil, false
	}
	return func() { _ = stty("echo") }, true
}
