package hostmem

// shareLogf reports refused pool peers (the peer itself gets an error);
// it discards unless the program sets it with SetLogf. Tests capture it.
var shareLogf = func(string, ...any) {}

// SetLogf sets where this package reports what it works around rather than
// fails on (a refused peer of a shared pool). Library code never prints:
// the program decides, e.g. kvsim passes a function writing to stderr.
func SetLogf(f func(format string, args ...any)) { shareLogf = f }
