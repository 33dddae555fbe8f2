//go:build !linux

package main

// trimProgram does nothing outside Linux: the operating system trims a
// process's working set of program pages on its own.
func trimProgram() {}
