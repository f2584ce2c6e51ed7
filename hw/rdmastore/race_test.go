//go:build race

package rdmastore

// raceEnabled: sync.Pool drops items at random under the race detector,
// so purego's pooled call blocks are then sometimes allocated.
const raceEnabled = true
