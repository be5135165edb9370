//go:build !linux

package main

// releaseStartupPages is Linux-only (see pages_linux.go); elsewhere the
// start-up pages stay mapped.
func releaseStartupPages() (int, error) { return 0, nil }
