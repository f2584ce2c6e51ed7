package ioengine

// engineLogf reports an engine's fall back to pread/pwrite (Engine's
// FallbackReason keeps the reason too); it discards unless the program
// sets it with SetLogf. Tests capture it.
var engineLogf = func(string, ...any) {}

// SetLogf sets where this package reports what it works around rather than
// fails on. Library code never prints: the program decides, e.g. kvsim
// passes a function writing to stderr.
func SetLogf(f func(format string, args ...any)) { engineLogf = f }
