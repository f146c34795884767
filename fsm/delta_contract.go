package fsm

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Property keys the catalog derives or checks.
const (
	PropTableID          = "io.unitycatalog.tableId"
	PropMinReader        = "delta.minReaderVersion"
	PropMinWriter        = "delta.minWriterVersion"
	PropFeaturePrefix    = "delta.feature."
	PropClustering       = "clusteringColumns"
	PropRowIDHighWater   = "delta.rowTracking.rowIdHighWaterMark"
	PropLastUpdate       = "delta.lastUpdateVersion"
	PropLastCommitTs     = "delta.lastCommitTimestamp"
	PropUniformFormats   = "delta.universalFormat.enabledFormats"
	DomainClustering     = "delta.clustering"
	DomainRowTracking    = "delta.rowTracking"
	featureSupported     = "supported"
	managedMinReader     = 3
	managedMinWriter     = 7
	featureClustering    = "clustering"
	featureRowTracking   = "rowTracking"
	featureCatalogManged = "catalogManaged"
)

// Features and properties a MANAGED Delta table must declare (UC 0.7.0).
var (
	ManagedReaderFeatures = []string{"catalogManaged", "v2Checkpoint", "vacuumProtocolCheck", "deletionVectors"}
	ManagedWriterFeatures = []string{"catalogManaged", "v2Checkpoint", "vacuumProtocolCheck", "deletionVectors", "inCommitTimestamp"}
	// ManagedProperties are the fixed required properties, in check order.
	ManagedProperties = [][2]string{
		{"delta.enableDeletionVectors", "true"},
		{"delta.checkpointPolicy", "v2"},
		{"delta.enableInCommitTimestamps", "true"},
		{"delta.checkpoint.writeStatsAsStruct", "true"},
		{"delta.checkpoint.writeStatsAsJson", "true"},
	}
)

// CheckManagedContract verifies the managed-table contract: protocol
// versions and features, domains backed by their writer features, and the
// fixed properties. props may be nil-valued for keys the client sent as
// JSON null (pass them via nullKeys).
func CheckManagedContract(p Protocol, props map[string]string, nullKeys map[string]bool, hasClustering, hasRowTracking bool) *Error {
	for _, f := range p.ReaderFeatures {
		if !slices.Contains(p.WriterFeatures, f) {
			return Invalidf("Feature '%s' is in reader-features but not writer-features. Per the Delta protocol, every reader-feature must also be a writer-feature.", f)
		}
	}
	if p.MinReaderVersion < managedMinReader {
		return Invalidf("MANAGED table minReaderVersion must be at least %d (got %d).", managedMinReader, p.MinReaderVersion)
	}
	if p.MinWriterVersion < managedMinWriter {
		return Invalidf("MANAGED table minWriterVersion must be at least %d (got %d).", managedMinWriter, p.MinWriterVersion)
	}
	for _, f := range ManagedReaderFeatures {
		if !slices.Contains(p.ReaderFeatures, f) {
			return Invalidf("MANAGED table missing required reader-feature '%s'.", f)
		}
	}
	for _, f := range ManagedWriterFeatures {
		if !slices.Contains(p.WriterFeatures, f) {
			return Invalidf("MANAGED table missing required writer-feature '%s'.", f)
		}
	}
	if err := checkDomainFeatures(p.WriterFeatures, hasClustering, hasRowTracking); err != nil {
		return err
	}
	for _, kv := range ManagedProperties {
		got, ok := props[kv[0]]
		if !ok || nullKeys[kv[0]] {
			got = "null"
		}
		if got != kv[1] {
			return Invalidf("MANAGED table required property '%s' must be '%s' (got '%s').", kv[0], kv[1], got)
		}
	}
	if strings.TrimSpace(props[PropTableID]) == "" {
		return Invalidf("MANAGED table required property '%s' is missing.", PropTableID)
	}
	return nil
}

func checkDomainFeatures(writerFeatures []string, hasClustering, hasRowTracking bool) *Error {
	if hasClustering && !slices.Contains(writerFeatures, featureClustering) {
		return Invalidf("domain-metadata.delta.clustering requires the 'clustering' writer feature.")
	}
	if hasRowTracking && !slices.Contains(writerFeatures, featureRowTracking) {
		return Invalidf("domain-metadata.delta.rowTracking requires the 'rowTracking' writer feature.")
	}
	return nil
}

// protocolFromProperties reads the protocol a table's properties declare.
// Feature keys do not say whether a feature is reader or writer, so every
// declared feature counts as a writer feature.
func protocolFromProperties(props map[string]string) (writerFeatures []string) {
	for k, v := range props {
		if f, ok := strings.CutPrefix(k, PropFeaturePrefix); ok && v == featureSupported {
			writerFeatures = append(writerFeatures, f)
		}
	}
	slices.Sort(writerFeatures)
	return writerFeatures
}

// applyProtocol writes the protocol-derived properties. replace drops
// every feature key first (set-protocol is a full replacement); at create
// the derived keys are an overlay on what the client sent.
func applyProtocol(props map[string]string, p Protocol, replace bool) {
	if replace {
		for k := range props {
			if strings.HasPrefix(k, PropFeaturePrefix) {
				delete(props, k)
			}
		}
	}
	props[PropMinReader] = strconv.Itoa(p.MinReaderVersion)
	props[PropMinWriter] = strconv.Itoa(p.MinWriterVersion)
	for _, f := range p.ReaderFeatures {
		props[featureKey(f)] = featureSupported
	}
	for _, f := range p.WriterFeatures {
		props[featureKey(f)] = featureSupported
	}
}

// applyDomainMetadata writes the properties that mirror domain metadata.
func applyDomainMetadata(props map[string]string, dm *DomainMetadata) {
	if dm == nil {
		return
	}
	if dm.ClusteringColumns != nil {
		b, _ := json.Marshal(*dm.ClusteringColumns) // [][]string always marshals
		props[PropClustering] = string(b)
	}
	if dm.RowIDHighWaterMark != nil {
		props[PropRowIDHighWater] = strconv.FormatInt(*dm.RowIDHighWaterMark, 10)
	}
}

// domainProperty maps a domain name to the property that mirrors it.
func domainProperty(domain string) string {
	switch domain {
	case DomainClustering:
		return PropClustering
	case DomainRowTracking:
		return PropRowIDHighWater
	}
	return ""
}

// KnownDomain reports whether the catalog tracks a Delta domain.
func KnownDomain(d string) bool { return domainProperty(d) != "" }

// uniformEnabled reports whether properties enable Iceberg UniForm.
func uniformEnabled(props map[string]string) bool {
	for _, f := range strings.Split(props[PropUniformFormats], ",") {
		if strings.EqualFold(strings.TrimSpace(f), "iceberg") {
			return true
		}
	}
	return false
}
