package chaos

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"sort"
)

// A simulated catalog generates large linearizable histories: clients of
// Delta tables, Iceberg tables and one transactions group run against
// tables whose state changes at one instant inside each operation's
// interval (its linearization point). Operations overlap, some answers are
// lost (unknown outcomes, some applied, some applied late, some never),
// most of them in faults, some commits are refused, and the final loads
// are taken after the last operation, as a drill records them. Updates of
// unknown outcome are never found out (nor are they in a drill): each
// doubles what porcupine must search to prove a history illegal.

const ms = int64(1_000_000)

// simTable is one table (or group) of the simulated catalog.
type simTable struct {
	name, protocol string
	files          []string // version i+1 -> file name (snapshot id, transaction id)
	etag           string
	etags          int
}

func (t *simTable) latest() int64 { return int64(len(t.files)) }

func (t *simTable) head() string {
	if len(t.files) == 0 {
		return ""
	}
	return t.files[len(t.files)-1]
}

// simEvent is something that happens at one instant: an operation's
// linearization point, or the late arrival of a commit whose answer was lost.
type simEvent struct {
	at, seq int64
	do      func()
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// sim runs the clients until end and records their operations.
type sim struct {
	rng   *rand.Rand
	queue simQueue
	seq   int64
	limit int   // operations to record
	now   int64 // the instant being simulated
	ops   []Op
	files int
}

func (s *sim) at(t int64, do func()) {
	s.seq++
	heap.Push(&s.queue, simEvent{at: t, seq: s.seq, do: do})
}

func (s *sim) chance(percent int) bool { return s.rng.IntN(100) < percent }

// faulty reports whether the instant being simulated is in a fault: for
// 400 ms of every second answers are lost far more often, after long
// time-outs.
func (s *sim) faulty() bool { return s.now%(1000*ms) < 400*ms }

// lossy reports whether an answer is lost: percent of the time, or half
// of the time in a fault.
func (s *sim) lossy(percent int) bool {
	if s.faulty() {
		percent = 50
	}
	return s.chance(percent)
}

func (s *sim) between(lo, hi int64) int64 { return lo + s.rng.Int64N(hi-lo+1) }

func (s *sim) file() string {
	s.files++
	return fmt.Sprint(1_000_000_000 + s.files)
}

// run schedules op invoked at from: step, at the linearization point,
// fills in its outcome from the table's state; then the op is recorded
// and next runs at its completion.
func (s *sim) run(op Op, from int64, step func(*Op), next func(Op)) {
	op.InvokeNs = from
	lin := from + s.between(ms/5, 4*ms)
	s.at(lin, func() {
		step(&op)
		op.CompleteNs = lin + s.between(ms/5, 4*ms)
		if op.Outcome == OutcomeUnknown && s.faulty() {
			op.CompleteNs += s.between(50*ms, 1000*ms) // a time-out
		} else if op.Outcome == OutcomeUnknown {
			op.CompleteNs += s.between(0, 30*ms)
		}
		s.ops = append(s.ops, op)
		if next != nil && len(s.ops) < s.limit {
			next(op)
		}
	})
}

// simClient is one sequential client of a table.
type simClient struct {
	s  *sim
	id int
	t  *simTable
}

func (c *simClient) op(kind string) Op {
	return Op{Protocol: c.t.protocol, Client: c.id, Table: c.t.name, Op: kind}
}

func (c *simClient) after(op Op) int64 { return op.CompleteNs + c.s.between(0, 2*ms) }

// deltaLoad loads a Delta table, then commits, updates or loads again.
func (c *simClient) deltaLoad(from int64, reader bool) {
	c.s.run(c.op(OpLoad), from, func(op *Op) {
		if c.s.lossy(3) {
			op.Outcome = OutcomeUnknown
			return
		}
		op.Outcome, op.Status, op.LatestVersion, op.ETag = OutcomeOK, 200, c.t.latest(), c.t.etag
	}, func(op Op) {
		switch {
		case reader || op.Outcome != OutcomeOK:
			c.deltaLoad(c.after(op), reader)
		case c.s.chance(20):
			c.deltaUpdate(op.ETag, c.after(op))
		default:
			c.deltaCommit(op.LatestVersion+1, c.s.file(), c.after(op))
		}
	})
}

// deltaCommit commits version v as file, retrying an unknown outcome
// byte-identically as the drill's Delta client does.
func (c *simClient) deltaCommit(v int64, file string, from int64) {
	op := c.op(OpCommit)
	op.Version, op.FileName = v, file
	c.s.run(op, from, func(op *Op) { c.deltaApply(op) }, func(op Op) {
		if op.Outcome == OutcomeUnknown {
			c.deltaCommit(v, file, op.CompleteNs+5*ms)
			return
		}
		c.deltaLoad(c.after(op), false)
	})
}

func (c *simClient) deltaApply(op *Op) {
	s, t := c.s, c.t
	switch {
	case op.Version == t.latest()+1 && s.lossy(4): // lost on the way, arrives late or never
		op.Outcome = OutcomeUnknown
		if s.chance(50) {
			s.at(s.now+s.between(ms, 40*ms), func() { c.deltaLate(*op) })
		}
	case op.Version == t.latest()+1 && s.chance(2):
		op.Outcome, op.Status = OutcomeFail, 429
	case op.Version == t.latest()+1:
		t.files = append(t.files, op.FileName)
		op.Outcome, op.Status = OutcomeOK, 200
	case t.files[op.Version-1] == op.FileName: // a replay
		op.Outcome, op.Status = OutcomeOK, 200
	default:
		op.Outcome, op.Status = OutcomeFail, 409
	}
	if op.Outcome != OutcomeFail && s.lossy(5) {
		op.Outcome, op.Status = OutcomeUnknown, 0 // the answer is lost
	}
}

// deltaLate is a commit arriving after its client gave up waiting.
func (c *simClient) deltaLate(op Op) {
	if op.Version == c.t.latest()+1 {
		c.t.files = append(c.t.files, op.FileName)
	}
}

func (c *simClient) deltaUpdate(etag string, from int64) {
	op := c.op(OpUpdate)
	op.ETag = etag
	c.s.run(op, from, func(op *Op) {
		switch {
		case op.ETag != c.t.etag:
			op.Outcome, op.Status = OutcomeFail, 409
		case c.s.lossy(3):
			op.Outcome = OutcomeUnknown
			if c.s.chance(50) {
				c.newETag()
			}
		default:
			op.Outcome, op.Status, op.NewETag = OutcomeOK, 200, c.newETag()
		}
	}, func(op Op) { c.deltaLoad(c.after(op), false) })
}

func (c *simClient) newETag() string {
	c.t.etags++
	c.t.etag = fmt.Sprint("e", c.t.etags)
	return c.t.etag
}

// icebergLoad loads an Iceberg table (or, with check, finds out whether a
// commit of unknown outcome may still arrive: then it is sent again).
func (c *simClient) icebergLoad(from int64, reader bool, check *Op) {
	c.s.run(c.op(OpLoad), from, func(op *Op) {
		if c.s.lossy(3) {
			op.Outcome = OutcomeUnknown
			return
		}
		op.Outcome, op.Status, op.LatestVersion, op.Head = OutcomeOK, 200, c.t.latest(), c.t.head()
	}, func(op Op) {
		switch {
		case reader || op.Outcome != OutcomeOK:
			c.icebergLoad(c.after(op), reader, check)
		case check != nil && op.LatestVersion == check.Version-1 && op.Head == check.Base:
			c.icebergCommit(*check, c.after(op))
		default:
			next := c.op(OpCommit)
			next.Version, next.Base, next.FileName = op.LatestVersion+1, op.Head, c.s.file()
			c.icebergCommit(next, c.after(op))
		}
	})
}

// icebergCommit commits a snapshot on its base (Iceberg, or a transaction
// of a group, which applies and conflicts alike).
func (c *simClient) icebergCommit(commit Op, from int64) {
	c.s.run(commit, from, func(op *Op) { c.icebergApply(op) }, func(op Op) {
		var check *Op
		if op.Outcome == OutcomeUnknown {
			check = &commit
		}
		c.icebergLoad(op.CompleteNs+5*ms, false, check)
	})
}

func (c *simClient) icebergApply(op *Op) {
	s, t := c.s, c.t
	applies := op.Version == t.latest()+1 && op.Base == t.head()
	switch {
	case applies && s.lossy(4):
		op.Outcome = OutcomeUnknown
		if s.chance(50) {
			s.at(s.now+s.between(ms, 40*ms), func() { c.icebergLate(*op) })
		}
	case applies && s.chance(2):
		op.Outcome, op.Status = OutcomeFail, 429
	case applies:
		t.files = append(t.files, op.FileName)
		op.Outcome, op.Status = OutcomeOK, 200
	default:
		op.Outcome, op.Status = OutcomeFail, 409
		if op.Protocol == ProtocolTransactions {
			op.Part = txParts[s.rng.IntN(2)] // the Delta version is taken, or the Iceberg base stale
		}
	}
	if op.Outcome != OutcomeFail && s.lossy(5) {
		op.Outcome, op.Status = OutcomeUnknown, 0
	}
}

func (c *simClient) icebergLate(op Op) {
	if op.Version == c.t.latest()+1 && op.Base == c.t.head() {
		c.t.files = append(c.t.files, op.FileName)
	}
}

// txLoad loads one table of a group (each a request of its own), then
// the next, then commits if the three agreed.
func (c *simClient) txLoad(from int64, part int, seen []Op, check *Op) {
	op := c.op(OpLoad)
	op.Part = txParts[part]
	c.s.run(op, from, func(op *Op) {
		if c.s.lossy(3) {
			op.Outcome = OutcomeUnknown
			return
		}
		op.Outcome, op.Status, op.LatestVersion, op.Head = OutcomeOK, 200, c.t.latest(), c.t.head()
		if op.Part == PartDelta && c.s.chance(20) {
			op.Head = "" // no longer tracked
		}
	}, func(op Op) {
		seen = append(seen, op)
		switch {
		case op.Outcome != OutcomeOK:
			c.txLoad(c.after(op), 0, nil, check)
		case part < 2:
			c.txLoad(c.after(op), part+1, seen, check)
		default:
			c.txDecide(seen, check, c.after(op))
		}
	})
}

func (c *simClient) txDecide(seen []Op, check *Op, from int64) {
	v, head := seen[1].LatestVersion, seen[1].Head
	for _, op := range seen {
		if op.LatestVersion != v || (op.Head != "" && op.Head != head) {
			c.txLoad(from, 0, nil, check)
			return
		}
	}
	if check != nil && v == check.Version-1 && head == check.Base {
		c.txCommit(*check, from)
		return
	}
	next := c.op(OpCommit)
	next.Version, next.Base, next.FileName = v+1, head, c.s.file()
	c.txCommit(next, from)
}

func (c *simClient) txCommit(commit Op, from int64) {
	c.s.run(commit, from, func(op *Op) { c.icebergApply(op) }, func(op Op) {
		var check *Op
		if op.Outcome == OutcomeUnknown {
			check = &commit
		}
		c.txLoad(op.CompleteNs+5*ms, 0, nil, check)
	})
}

// finalLoads are the loads after healing, one per table (per table of a group).
func (s *sim) finalLoads(tables []*simTable) {
	at := int64(0)
	for _, op := range s.ops {
		at = max(at, op.CompleteNs)
	}
	for i, t := range tables {
		parts := []string{""}
		if t.protocol == ProtocolTransactions {
			parts = txParts
		}
		for _, p := range parts {
			at += ms
			op := Op{Protocol: t.protocol, Client: 1000 + i, Table: t.name, Op: OpLoad, Part: p, Final: true,
				InvokeNs: at, CompleteNs: at + ms/2, Outcome: OutcomeOK, Status: 200, LatestVersion: t.latest(),
				Commits: t.tracked(p)}
			if t.protocol != ProtocolDelta {
				op.Head = t.head()
			}
			s.ops = append(s.ops, op)
		}
	}
}

// tracked is what a final load lists: a Delta table the versions not yet
// published (the last ten), Iceberg and Lance every version.
func (t *simTable) tracked(part string) map[int64]string {
	delta := part == PartDelta || t.protocol == ProtocolDelta
	out := map[int64]string{}
	for i, f := range t.files {
		if v := int64(i + 1); !delta || v > t.latest()-10 {
			out[v] = f
		}
	}
	return out
}

// genHistory generates a linearizable history of about n operations: three
// Delta tables, two Iceberg tables and a transactions group, three writers
// each and a reader per table, with overlapping operations.
func genHistory(seed uint64, n int) []Op {
	s := &sim{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), limit: n}
	var tables []*simTable
	id := 0
	for i, proto := range []string{ProtocolDelta, ProtocolDelta, ProtocolDelta, ProtocolIceberg, ProtocolIceberg, ProtocolTransactions} {
		t := &simTable{name: fmt.Sprintf("t%d", i), protocol: proto, etag: "e0"}
		tables = append(tables, t)
		for k := 0; k < 4; k++ {
			c := &simClient{s: s, id: id, t: t}
			id++
			start, reader := s.between(0, 3*ms), k == 3
			switch {
			case proto == ProtocolDelta:
				c.deltaLoad(start, reader)
			case proto == ProtocolIceberg:
				c.icebergLoad(start, reader, nil)
			case !reader:
				c.txLoad(start, 0, nil, nil)
			}
		}
	}
	for s.queue.Len() > 0 {
		e := heap.Pop(&s.queue).(simEvent)
		s.now = e.at
		e.do()
	}
	sort.SliceStable(s.ops, func(i, j int) bool { return s.ops[i].CompleteNs < s.ops[j].CompleteNs })
	s.finalLoads(tables)
	return s.ops
}
