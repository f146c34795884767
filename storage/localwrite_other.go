//go:build !linux

package storage

// writeUnnamed makes no unnamed files outside Linux.
func writeUnnamed(dir, path string, data []byte) (bool, error) { return false, nil }
