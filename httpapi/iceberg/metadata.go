package iceberg

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/raftcat/raftcat/storage"
)

// metadataFile is a parsed metadata file and its bytes, as stored.
type metadataFile struct {
	location string
	raw      []byte
	meta     table.Metadata
	// snaps are meta's snapshots and spans where each lies in raw, for
	// the next commit's encoding to copy; nil where not known (a file
	// read back rather than written here).
	snaps []table.Snapshot
	spans []span
}

// objects returns the object store, or a 503 when the node has none.
func (s *Server) objects() (ObjectStore, error) {
	if s.cfg.Objects == nil {
		return nil, echo.NewHTTPError(http.StatusServiceUnavailable, "This node has no object store configured for Iceberg metadata.")
	}
	return s.cfg.Objects, nil
}

// readMetadata returns the metadata file at loc, from the cache when it
// holds it (files never change once written).
func (s *Server) readMetadata(ctx context.Context, loc string) (*metadataFile, error) {
	if f, ok := s.cache.get(loc); ok {
		return f, nil
	}
	objs, err := s.objects()
	if err != nil {
		return nil, err
	}
	raw, err := objs.Read(ctx, loc)
	if err != nil {
		return nil, fmt.Errorf("read metadata file %s: %w", loc, err)
	}
	f, err := parseMetadataFile(loc, raw)
	if err != nil {
		return nil, err
	}
	s.cache.put(f)
	return f, nil
}

func parseMetadataFile(loc string, raw []byte) (*metadataFile, error) {
	meta, err := table.ParseMetadataBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("parse metadata file %s: %w", loc, err)
	}
	return &metadataFile{location: loc, raw: raw, meta: meta}, nil
}

// metadataLocation names the metadata file of a table's version n.
func metadataLocation(tableLoc string, version int64) string {
	return storage.Join(tableLoc, fmt.Sprintf("metadata/%05d-%s.metadata.json", version, uuid.NewString()))
}

// writeMetadata writes new metadata create-only at loc and caches it;
// base is the file it was built from (nil for a new table), whose bytes
// its encoding reuses.
func (s *Server) writeMetadata(ctx context.Context, loc string, meta table.Metadata, base *metadataFile) (*metadataFile, error) {
	objs, err := s.objects()
	if err != nil {
		return nil, err
	}
	done := s.stage(stageEncode)
	f, err := encodeMetadata(meta, base)
	done()
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	done = s.stage(stageWrite)
	err = objs.Write(ctx, loc, f.raw)
	done()
	if err != nil {
		return nil, fmt.Errorf("write metadata file %s: %w", loc, err)
	}
	f.location = loc
	s.cache.put(f)
	return f, nil
}

// removeFile deletes a metadata file no pointer will name (best effort).
func (s *Server) removeFile(reqCtx context.Context, loc string) {
	s.cache.drop(loc)
	if s.cfg.Objects == nil {
		return
	}
	ctx := context.WithoutCancel(reqCtx)
	if err := s.cfg.Objects.Delete(ctx, loc); err != nil && !errors.Is(err, storage.ErrNotFound) {
		s.log.WarnContext(ctx, "could not delete an unreferenced metadata file", "location", loc, "err", err)
	}
}

// metadataCache holds parsed metadata files by location, least recently
// used first out once their bytes exceed the bound.
type metadataCache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	order *list.List // of *metadataFile, most recent at the front
	byLoc map[string]*list.Element
}

func newMetadataCache(maxBytes int64) *metadataCache {
	return &metadataCache{max: maxBytes, order: list.New(), byLoc: map[string]*list.Element{}}
}

// cost estimates what an entry holds: its bytes and their parsed form.
func cost(f *metadataFile) int64 { return 3 * int64(len(f.raw)) }

func (m *metadataCache) get(loc string) (*metadataFile, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byLoc[loc]
	if !ok {
		return nil, false
	}
	m.order.MoveToFront(el)
	return el.Value.(*metadataFile), true
}

func (m *metadataCache) put(f *metadataFile) {
	if cost(f) > m.max {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byLoc[f.location]; ok {
		return
	}
	m.byLoc[f.location] = m.order.PushFront(f)
	m.bytes += cost(f)
	for m.bytes > m.max {
		m.remove(m.order.Back())
	}
}

func (m *metadataCache) drop(loc string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byLoc[loc]; ok {
		m.remove(el)
	}
}

func (m *metadataCache) remove(el *list.Element) {
	f := m.order.Remove(el).(*metadataFile)
	delete(m.byLoc, f.location)
	m.bytes -= cost(f)
}

// refsOnly is a metadata file's JSON with only the snapshots a branch or
// tag references (the snapshots=refs load).
func refsOnly(f *metadataFile) (json.RawMessage, error) {
	keep := map[int64]bool{}
	for _, r := range f.meta.Refs() {
		keep[r.SnapshotID] = true
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(f.raw, &doc); err != nil {
		return nil, err
	}
	var snaps []json.RawMessage
	if err := json.Unmarshal(doc["snapshots"], &snaps); err != nil && doc["snapshots"] != nil {
		return nil, err
	}
	kept := []json.RawMessage{}
	for _, raw := range snaps {
		var id struct {
			ID int64 `json:"snapshot-id"`
		}
		if json.Unmarshal(raw, &id) == nil && keep[id.ID] {
			kept = append(kept, raw)
		}
	}
	doc["snapshots"], _ = json.Marshal(kept)
	return json.Marshal(doc)
}
