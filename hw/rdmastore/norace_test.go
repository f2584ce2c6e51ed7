//go:build !race

package rdmastore

const raceEnabled = false
