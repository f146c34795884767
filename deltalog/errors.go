package deltalog

import (
	"errors"
	"fmt"
)

var (
	// ErrNotDeltaTable means the location has no _delta_log with a commit
	// or checkpoint in it.
	ErrNotDeltaTable = errors.New("deltalog: not a Delta table")
	// ErrVersionUnavailable means the version is below Earliest, above
	// Latest, or cannot be reconstructed from the files in the log.
	ErrVersionUnavailable = errors.New("deltalog: version not available")
	// ErrTimestampOutOfRange means no version matches a timestamp.
	ErrTimestampOutOfRange = errors.New("deltalog: timestamp out of range")
	// ErrCorrupt means a log file could not be read or parsed, or a
	// commit is missing inside a range that must be replayed.
	ErrCorrupt = errors.New("deltalog: corrupt log")
)

// corruptf wraps ErrCorrupt with detail.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// unavailablef wraps ErrVersionUnavailable with detail.
func unavailablef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrVersionUnavailable, fmt.Sprintf(format, args...))
}
