package fsm_test

import (
	"testing"

	"github.com/raftcat/raftcat/fsm"
)

// caseTwin is a command that creates or renames something to a name
// differing only in case from a sibling's that caseFixture made, and how
// to find what it made, by its exact name.
type caseTwin struct {
	what  string
	cmd   func(st fsm.Stamp) fsm.Command
	code  fsm.Code
	msg   string
	found func(s *fsm.State) bool
}

var defaultNs = []string{"unity", "default"}

// caseFixture creates, under the original rules, the siblings the twins
// collide with: catalog Sales, schemas unity.default and unity.x, the
// namespace unity.default.Ns, the tables Events (Delta), ice1 (Iceberg)
// and lance1 (Lance) in unity.default, and a share and a recipient.
func caseFixture(e *env) {
	e.t.Helper()
	e.createCatalog("Sales", "")
	e.createSchema("unity", "x", "")
	e.changed(&fsm.CreateNamespace{Stamp: e.st(), ID: e.newID("ns"), Path: []string{"unity", "default", "Ns"}})
	e.createExternal("unity", "default", "Events")
	e.changed(&fsm.CreateIcebergTable{Stamp: e.st(), ID: e.newID("ice"), Namespace: defaultNs, Name: "ice1",
		TableType: fsm.TableExternal, Location: "s3://ext/ice1", MetadataLocation: "s3://ext/ice1/m.json"})
	e.changed(&fsm.DeclareLanceTable{Stamp: e.st(), ID: e.newID("lance"), Namespace: defaultNs, Name: "lance1",
		TableType: fsm.TableExternal, Location: "s3://ext/lance1"})
	e.changed(&fsm.CreateShare{Stamp: e.st(), ID: e.newID("share"), Name: "Sh"})
	e.changed(&fsm.CreateRecipient{Stamp: e.st(), ID: e.newID("rcp"), Name: "Rc", TokenID: e.newID("tok"),
		ActivationHash: e.newID("hash")})
}

func tableAt(s *fsm.State, name string) bool { _, ok := s.TableIn(defaultNs, name); return ok }

func caseTwins() []caseTwin {
	return []caseTwin{
		{"catalog create", func(st fsm.Stamp) fsm.Command { return &fsm.CreateCatalog{Stamp: st, ID: "c2", Name: "sales"} },
			fsm.CodeCatalogExists, "Catalog already exists: sales differs only in case from the existing catalog Sales",
			func(s *fsm.State) bool { _, ok := s.Catalog("sales"); return ok }},
		{"catalog rename", func(st fsm.Stamp) fsm.Command { return &fsm.UpdateCatalog{Stamp: st, Name: "unity", NewName: "SALES"} },
			fsm.CodeCatalogExists, "SALES differs only in case from the existing catalog Sales",
			func(s *fsm.State) bool { _, ok := s.Catalog("SALES"); return ok }},
		{"schema create", func(st fsm.Stamp) fsm.Command {
			return &fsm.CreateSchema{Stamp: st, ID: "s2", CatalogName: "unity", Name: "Default"}
		}, fsm.CodeSchemaExists, "Schema already exists: unity.Default differs only in case from the existing schema unity.default",
			func(s *fsm.State) bool { _, ok := s.Schema("unity", "Default"); return ok }},
		{"schema rename", func(st fsm.Stamp) fsm.Command {
			return &fsm.UpdateSchema{Stamp: st, CatalogName: "unity", Name: "x", NewName: "DEFAULT"}
		}, fsm.CodeSchemaExists, "unity.DEFAULT differs only in case from the existing schema unity.default",
			func(s *fsm.State) bool { _, ok := s.Schema("unity", "DEFAULT"); return ok }},
		{"namespace create", func(st fsm.Stamp) fsm.Command {
			return &fsm.CreateNamespace{Stamp: st, ID: "n2", Path: []string{"unity", "default", "ns"}}
		}, fsm.CodeSchemaExists, "unity.default.ns differs only in case from the existing namespace unity.default.Ns",
			func(s *fsm.State) bool { _, ok := s.Namespace([]string{"unity", "default", "ns"}); return ok }},
		{"delta table create", func(st fsm.Stamp) fsm.Command {
			return &fsm.CreateTable{Stamp: st, ID: "t2", CatalogName: "unity", SchemaName: "default", Name: "events",
				Format: fsm.FormatDelta, TableType: fsm.TableExternal, Location: "s3://ext/t2", Columns: testColumns(),
				Protocol: fsm.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}}
		}, fsm.CodeTableExists, "Table already exists: unity.default.events differs only in case from the existing table unity.default.Events",
			func(s *fsm.State) bool { return tableAt(s, "events") }},
		{"staging table", func(st fsm.Stamp) fsm.Command {
			return &fsm.CreateStagingTable{Stamp: st, ID: "st2", CatalogName: "unity", SchemaName: "default", Name: "EVENTS"}
		}, fsm.CodeTableExists, "unity.default.EVENTS differs only in case",
			func(s *fsm.State) bool { _, ok := s.StagingTable("st2"); return ok }},
		{"delta table rename", func(st fsm.Stamp) fsm.Command {
			return &fsm.RenameTable{Stamp: st, CatalogName: "unity", SchemaName: "default", Name: "ice1", NewName: "evENTS"}
		}, fsm.CodeTableExists, "unity.default.evENTS differs only in case from the existing table unity.default.Events",
			func(s *fsm.State) bool { return tableAt(s, "evENTS") }},
		{"iceberg table create", func(st fsm.Stamp) fsm.Command {
			return &fsm.CreateIcebergTable{Stamp: st, ID: "i2", Namespace: defaultNs, Name: "ICE1", TableType: fsm.TableExternal,
				Location: "s3://ext/i2", MetadataLocation: "s3://ext/i2/m.json"}
		}, fsm.CodeTableExists, "unity.default.ICE1 differs only in case from the existing table unity.default.ice1",
			func(s *fsm.State) bool { return tableAt(s, "ICE1") }},
		{"iceberg table rename", func(st fsm.Stamp) fsm.Command {
			return &fsm.RenameIcebergTable{Stamp: st, Namespace: defaultNs, Name: "ice1", NewNamespace: defaultNs, NewName: "Lance1"}
		}, fsm.CodeTableExists, "unity.default.Lance1 differs only in case from the existing table unity.default.lance1",
			func(s *fsm.State) bool { return tableAt(s, "Lance1") }},
		{"iceberg view create", func(st fsm.Stamp) fsm.Command {
			return &fsm.CreateIcebergView{Stamp: st, ID: "v2", Namespace: defaultNs, Name: "EVENTS", MetadataLocation: "s3://ext/v2.json"}
		}, fsm.CodeTableExists, "unity.default.EVENTS differs only in case from the existing table unity.default.Events",
			func(s *fsm.State) bool { return tableAt(s, "EVENTS") }},
		{"lance declare", func(st fsm.Stamp) fsm.Command {
			return &fsm.DeclareLanceTable{Stamp: st, ID: "l2", Namespace: defaultNs, Name: "LANCE1", TableType: fsm.TableExternal,
				Location: "s3://ext/l2"}
		}, fsm.CodeTableExists, "unity.default.LANCE1 differs only in case",
			func(s *fsm.State) bool { return tableAt(s, "LANCE1") }},
		{"lance rename", func(st fsm.Stamp) fsm.Command {
			return &fsm.RenameLanceTable{Stamp: st, Namespace: defaultNs, Name: "lance1", NewNamespace: defaultNs, NewName: "Ice1"}
		}, fsm.CodeTableExists, "unity.default.Ice1 differs only in case from the existing table unity.default.ice1",
			func(s *fsm.State) bool { return tableAt(s, "Ice1") }},
	}
}

// From RulesCaseNames on, a name that differs only in case from a
// sibling's is refused with the kind's "already exists" code, and nothing
// changes.
func TestCaseTwinsRefused(t *testing.T) {
	for _, tc := range caseTwins() {
		t.Run(tc.what, func(t *testing.T) {
			e := newEnv(t)
			caseFixture(e)
			st := e.st()
			st.Rules = fsm.RulesCaseNames
			e.fail(tc.cmd(st), tc.code, tc.msg)
			if tc.found(e.m.State()) {
				t.Fatalf("the refused twin exists")
			}
		})
	}
}

// Entries proposed under older rules apply as they always did: the case
// twin is created, and both names are found exactly as spelled.
func TestCaseTwinsOfOlderEntriesStillApply(t *testing.T) {
	for _, rules := range []uint16{fsm.RulesOriginal, fsm.RulesGossipKeys} {
		for _, tc := range caseTwins() {
			t.Run(tc.what, func(t *testing.T) {
				e := newEnv(t)
				caseFixture(e)
				st := e.st()
				st.Rules = rules
				e.changed(tc.cmd(st))
				if !tc.found(e.m.State()) {
					t.Fatalf("rules %d: the twin was not created", rules)
				}
			})
		}
	}
}

// Renaming to another spelling of the name itself is not a collision.
func TestCaseRenameOfItselfAllowed(t *testing.T) {
	e := newEnv(t)
	caseFixture(e)
	st := func() fsm.Stamp { s := e.st(); s.Rules = fsm.RulesCaseNames; return s }
	e.changed(&fsm.UpdateCatalog{Stamp: st(), Name: "Sales", NewName: "sales"})
	e.changed(&fsm.UpdateSchema{Stamp: st(), CatalogName: "unity", Name: "x", NewName: "X"})
	e.changed(&fsm.RenameTable{Stamp: st(), CatalogName: "unity", SchemaName: "default", Name: "Events", NewName: "events"})
	e.changed(&fsm.RenameIcebergTable{Stamp: st(), Namespace: defaultNs, Name: "ice1", NewNamespace: defaultNs, NewName: "Ice1"})
	e.changed(&fsm.RenameLanceTable{Stamp: st(), Namespace: defaultNs, Name: "lance1", NewNamespace: defaultNs, NewName: "LANCE1"})
	for _, n := range []string{"events", "Ice1", "LANCE1"} {
		if !tableAt(e.m.State(), n) {
			t.Fatalf("table %s not found after its rename", n)
		}
	}
	if _, ok := e.m.State().Catalog("Sales"); ok {
		t.Fatal("lookups are exact: the old spelling still answers")
	}
}

// Siblings only: the same name in another case may live in another
// catalog, schema or namespace, and a table may share a namespace's name.
func TestCaseTwinsOnlyAmongSiblings(t *testing.T) {
	e := newEnv(t)
	caseFixture(e)
	st := func() fsm.Stamp { s := e.st(); s.Rules = fsm.RulesCaseNames; return s }
	e.changed(&fsm.CreateSchema{Stamp: st(), ID: "s3", CatalogName: "Sales", Name: "Default"})
	e.changed(&fsm.CreateNamespace{Stamp: st(), ID: "n3", Path: []string{"unity", "default", "Ns", "events"}})
	e.changed(&fsm.CreateIcebergTable{Stamp: st(), ID: "i3", Namespace: []string{"unity", "default", "Ns"}, Name: "EVENTS",
		TableType: fsm.TableExternal, Location: "s3://ext/i3", MetadataLocation: "s3://ext/i3/m.json"})
	// A table may share a namespace's name, and the table EVENTS deeper
	// down is no sibling of the tables of unity.default.
	e.changed(&fsm.CreateIcebergTable{Stamp: st(), ID: "i5", Namespace: defaultNs, Name: "Ns",
		TableType: fsm.TableExternal, Location: "s3://ext/i5", MetadataLocation: "s3://ext/i5/m.json"})
	e.fail(&fsm.CreateIcebergTable{Stamp: st(), ID: "i6", Namespace: defaultNs, Name: "nS",
		TableType: fsm.TableExternal, Location: "s3://ext/i6", MetadataLocation: "s3://ext/i6/m.json"},
		fsm.CodeTableExists, "differs only in case")
}

// Shares and recipients were always keyed case-insensitively: a twin is
// refused under every rules level, and from RulesCaseNames on the
// message says that the existing name differs only in case.
func TestCaseTwinsOfSharesAndRecipients(t *testing.T) {
	for _, rules := range []uint16{fsm.RulesGossipKeys, fsm.RulesCaseNames} {
		e := newEnv(t)
		caseFixture(e)
		st := e.st()
		st.Rules = rules
		want := "Share already exists: sh"
		if rules >= fsm.RulesCaseNames {
			want = "Share already exists: sh differs only in case from the existing share Sh"
		}
		e.fail(&fsm.CreateShare{Stamp: st, ID: "sh2", Name: "sh"}, fsm.CodeShareExists, want)
		want = "Recipient already exists: RC"
		if rules >= fsm.RulesCaseNames {
			want = "Recipient already exists: RC differs only in case from the existing recipient Rc"
		}
		e.fail(&fsm.CreateRecipient{Stamp: st, ID: "r2", Name: "RC", TokenID: "tok2", ActivationHash: "h2"},
			fsm.CodeRecipientExists, want)
	}
}
