package sharing

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/raftcat/raftcat/deltalog"
)

// capabilities is what the client announced in delta-sharing-capabilities:
// "responseformat=delta,parquet;readerfeatures=deletionvectors;..." (keys
// and values case-insensitive, malformed parts ignored).
type capabilities struct {
	formats        []string
	readerFeatures map[string]bool
	endStream      bool
}

const capabilitiesHeader = "delta-sharing-capabilities"

func parseCapabilities(h string) capabilities {
	caps := capabilities{readerFeatures: map[string]bool{}}
	for _, part := range strings.Split(strings.ToLower(h), ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		values := splitTrim(v)
		switch strings.TrimSpace(k) {
		case "responseformat":
			caps.formats = values
		case "readerfeatures":
			for _, f := range values {
				caps.readerFeatures[f] = true
			}
		case "includeendstreamaction":
			caps.endStream = slices.Contains(values, "true")
		}
	}
	return caps
}

func splitTrim(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// dataFeatures are the reader features that change how a table's data
// files are read. The others (catalogManaged, v2Checkpoint,
// vacuumProtocolCheck, ...) concern the log's layout, which a recipient
// never sees: it builds a fresh log from the lines it is sent.
var dataFeatures = []string{"deletionVectors", "columnMapping", "timestampNtz", "typeWidening",
	"typeWidening-preview", "variantType", "variantType-preview", "variantShredding-preview"}

func isDataFeature(f string) bool {
	return slices.ContainsFunc(dataFeatures, func(d string) bool { return strings.EqualFold(d, f) })
}

// requiredFeatures are the data features a reader of the table must
// support, by their protocol names.
func requiredFeatures(p *deltalog.Protocol, m *deltalog.Metadata) []string {
	var out []string
	for _, f := range p.ReaderFeatures {
		if isDataFeature(f) {
			out = append(out, f)
		}
	}
	add := func(f string) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if mode := m.Configuration["delta.columnMapping.mode"]; mode != "" && !strings.EqualFold(mode, "none") {
		add("columnMapping")
	}
	if strings.EqualFold(m.Configuration["delta.enableDeletionVectors"], "true") {
		add("deletionVectors")
	}
	return out
}

// chooseFormat decides the response format: delta when the client asked
// for it alone, or offered both and the table needs it; parquet
// otherwise, refusing a table a parquet-only reader would read wrong.
// A delta answer requires the client to support every data feature.
func chooseFormat(caps capabilities, p *deltalog.Protocol, m *deltalog.Metadata) (delta bool, err error) {
	need := requiredFeatures(p, m)
	delta = slices.Contains(caps.formats, "delta") && (len(need) > 0 || !slices.Contains(caps.formats, "parquet"))
	if !delta {
		if len(need) > 0 || p.MinReaderVersion > 3 {
			return false, unsupported("Unsupported Delta Table Properties: the table uses %s, which the parquet response format cannot represent; "+
				"ask for responseformat=delta with these reader features.", strings.Join(need, ", "))
		}
		return false, nil
	}
	for _, f := range need {
		if !caps.readerFeatures[strings.ToLower(f)] {
			return true, unsupported("The table needs the reader feature %s, which the client did not announce in %s.", f, capabilitiesHeader)
		}
	}
	return true, nil
}

// formatName is the response header's value.
func formatName(delta bool) string {
	if delta {
		return "delta"
	}
	return "parquet"
}

// recipientProtocol is the protocol a delta-format recipient sees: the
// table's, without the log-layout features it cannot use.
func recipientProtocol(p deltalog.Protocol) deltalog.Protocol {
	if p.MinReaderVersion < 3 {
		return p
	}
	out := deltalog.Protocol{MinReaderVersion: 3, MinWriterVersion: p.MinWriterVersion}
	for _, f := range p.ReaderFeatures {
		if isDataFeature(f) {
			out.ReaderFeatures = append(out.ReaderFeatures, f)
		}
	}
	layout := []string{"catalogManaged", "catalogOwned-preview", "v2Checkpoint", "vacuumProtocolCheck"}
	for _, f := range p.WriterFeatures {
		if !slices.Contains(layout, f) {
			out.WriterFeatures = append(out.WriterFeatures, f)
		}
	}
	if len(out.ReaderFeatures) == 0 {
		out.MinReaderVersion = 1
	}
	if len(out.WriterFeatures) == 0 {
		out.MinWriterVersion = min(p.MinWriterVersion, 2)
	}
	return out
}

// parquetSchema is the schema a parquet-format recipient sees: each
// top-level field's metadata reduced to its comment.
func parquetSchema(schemaString string) string {
	var schema map[string]any
	if json.Unmarshal([]byte(schemaString), &schema) != nil {
		return schemaString
	}
	fields, _ := schema["fields"].([]any)
	for _, f := range fields {
		field, ok := f.(map[string]any)
		if !ok {
			continue
		}
		meta, _ := field["metadata"].(map[string]any)
		kept := map[string]any{}
		if c, ok := meta["comment"]; ok {
			kept["comment"] = c
		}
		field["metadata"] = kept
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return schemaString
	}
	return string(raw)
}
