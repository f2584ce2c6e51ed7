// Package bucket is the SSD tier's on-disk store, modelled on Mooncake's
// bucket backend: blocks packed into large bucket files written with
// O_DIRECT, an index rebuilt from the files on open, and a fault seam
// (FaultPlan) through which tests fail any of its I/O.
package bucket
