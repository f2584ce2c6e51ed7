// Package ioengine moves bytes between memory and files: io_uring with a
// pread/pwrite fallback, O_DIRECT files and alignment checks, arenas of
// memory the garbage collector never moves, and the raw-device I/O bench.
package ioengine
