package deltalog

import (
	"fmt"
	"strconv"
	"strings"
)

// DeletionVector describes the rows of a data file that are deleted.
// StorageType is "u" (a file next to the table, named by a z85-encoded
// UUID with an optional random prefix), "p" (an absolute path) or "i"
// (the bitmap inline, z85-encoded).
type DeletionVector struct {
	StorageType    string `json:"storageType"`
	PathOrInlineDv string `json:"pathOrInlineDv"`
	Offset         *int32 `json:"offset,omitempty"`
	SizeInBytes    int32  `json:"sizeInBytes"`
	Cardinality    int64  `json:"cardinality"`
}

// UniqueID identifies the deletion vector: storageType and pathOrInlineDv
// concatenated, followed by "@" and the offset when there is one.
func (d *DeletionVector) UniqueID() string {
	id := d.StorageType + d.PathOrInlineDv
	if d.Offset != nil {
		id += "@" + strconv.Itoa(int(*d.Offset))
	}
	return id
}

// FileLocation returns the absolute URL of the file holding the deletion
// vector, given the table root URL; false for an inline vector or one
// that cannot be decoded.
func (d *DeletionVector) FileLocation(table string) (string, bool) {
	switch d.StorageType {
	case "u":
		return uuidDVLocation(strings.TrimRight(table, "/"), d.PathOrInlineDv)
	case "p":
		if d.PathOrInlineDv == "" {
			return "", false
		}
		return d.PathOrInlineDv, true
	}
	return "", false
}

// uuidDVLocation decodes "<prefix><20 chars of z85 UUID>" into
// <table>/<prefix>/deletion_vector_<uuid>.bin.
func uuidDVLocation(table, s string) (string, bool) {
	if len(s) < 20 {
		return "", false
	}
	prefix, enc := s[:len(s)-20], s[len(s)-20:]
	raw, err := z85Decode(enc)
	if err != nil {
		return "", false
	}
	name := "deletion_vector_" + formatUUID(raw) + ".bin"
	if prefix != "" {
		return table + "/" + prefix + "/" + name, true
	}
	return table + "/" + name, true
}

func formatUUID(b []byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85Value maps a Z85 character to its digit value, -1 when invalid.
var z85Value = func() [256]int16 {
	var t [256]int16
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(z85Alphabet); i++ {
		t[z85Alphabet[i]] = int16(i)
	}
	return t
}()

// z85Decode decodes ZeroMQ Z85 text (a multiple of 5 characters, each
// group a big-endian base-85 number of 4 bytes).
func z85Decode(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85: length %d is not a multiple of 5", len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for _, c := range []byte(s[i : i+5]) {
			d := z85Value[c]
			if d < 0 {
				return nil, fmt.Errorf("z85: invalid character %q", c)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("z85: group %q overflows", s[i:i+5])
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}
