package deltalog

import (
	"bytes"
	"testing"
)

func TestZ85Decode(t *testing.T) {
	// The example of the Z85 specification (ZeroMQ RFC 32).
	got, err := z85Decode("HelloWorld")
	want := []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("z85Decode = %x, %v", got, err)
	}
	for _, bad := range []string{"Hell", "Hello World", "%%%%%"} {
		if _, err := z85Decode(bad); err == nil {
			t.Errorf("z85Decode(%q) succeeded", bad)
		}
	}
}

func TestDeletionVectorIDsAndLocations(t *testing.T) {
	off := int32(1)
	u := &DeletionVector{StorageType: "u", PathOrInlineDv: "ab" + "HelloWorldHelloWorld", Offset: &off}
	if id := u.UniqueID(); id != "uabHelloWorldHelloWorld@1" {
		t.Errorf("UniqueID %q", id)
	}
	loc, ok := u.FileLocation("s3://b/t/")
	if want := "s3://b/t/ab/deletion_vector_864fd26f-b559-f75b-864f-d26fb559f75b.bin"; !ok || loc != want {
		t.Errorf("FileLocation = %q %v, want %q", loc, ok, want)
	}
	noPrefix := &DeletionVector{StorageType: "u", PathOrInlineDv: "HelloWorldHelloWorld"}
	if loc, _ := noPrefix.FileLocation("s3://b/t"); loc != "s3://b/t/deletion_vector_864fd26f-b559-f75b-864f-d26fb559f75b.bin" {
		t.Errorf("FileLocation without prefix = %q", loc)
	}
	if id := noPrefix.UniqueID(); id != "uHelloWorldHelloWorld" {
		t.Errorf("UniqueID without offset %q", id)
	}
	p := &DeletionVector{StorageType: "p", PathOrInlineDv: "s3://b/dv.bin"}
	if loc, ok := p.FileLocation("s3://b/t"); !ok || loc != "s3://b/dv.bin" {
		t.Errorf("absolute DV %q %v", loc, ok)
	}
	inline := &DeletionVector{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"}
	if _, ok := inline.FileLocation("s3://b/t"); ok {
		t.Error("inline DV has a file")
	}
}

func TestListingNames(t *testing.T) {
	cases := map[string]struct {
		kind     int
		ok       bool
		part, of int
	}{
		".checkpoint.parquet":                                      {cpClassic, true, 0, 0},
		".checkpoint.0000000002.0000000003.parquet":                {cpMulti, true, 2, 3},
		".checkpoint.0000000004.0000000003.parquet":                {0, false, 0, 0},
		".checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json":    {cpV2, true, 0, 0},
		".checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.parquet": {cpV2, true, 0, 0},
		".checkpoint.80a083e8.crc":                                 {0, false, 0, 0},
		".crc":                                                     {0, false, 0, 0},
	}
	for rest, want := range cases {
		kind, part, of, ok := checkpointName(rest)
		if ok != want.ok || (ok && (kind != want.kind || part != want.part || of != want.of)) {
			t.Errorf("checkpointName(%q) = %d %d/%d %v", rest, kind, part, of, ok)
		}
	}
	if _, rest, ok := splitVersion("00000000000000000001.00000000000000000003.compacted.json"); !ok || rest == ".json" {
		t.Errorf("compacted file parsed as a commit: %q %v", rest, ok)
	}
}
