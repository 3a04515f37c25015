package snapshot

// A reader that keeps a result computed over every row (DeviceFit's
// candidate verdicts, per pod shape) brings it up to a later cycle by
// redoing only the rows read since (Cycle.Moved): a pod's cycle then costs
// what changed in the cluster, not the size of the fleet. Between two pods
// of a job one row moves (the node the first was bound to), plus the nodes
// whose pods or objects the informers changed.

// Mark is where a reader's kept result stands in a Table's history of
// reads: two results with the same Mark saw the same rows.
type Mark struct {
	// layout counts the times positions stopped lining up: the node list
	// changed length, or the kind or shape table started over. Rows of
	// another layout are other nodes, or numbered otherwise.
	layout uint64
	// seq counts the rows read in this layout.
	seq uint64
}

// moveLog is the positions of the rows read since from, in order: the
// read numbered from.seq+1+i is at position moves[i].
type moveLog struct {
	from  Mark
	moves []int
}

// restart starts a new layout: no result kept before it can be brought up
// to date. The slice is not reused, as a Cycle of the last refresh may
// still read it.
func (l *moveLog) restart() {
	l.from = Mark{layout: l.from.layout + 1}
	l.moves = nil
}

// add logs a read of the row at position j, for rows rows. Past a log as
// long as the table, bringing a result up to date costs as much as
// computing it anew: the log starts over from here and older results are
// recomputed.
func (l *moveLog) add(j, rows int) {
	if len(l.moves) >= max(rows, 64) {
		l.from.seq += uint64(len(l.moves))
		l.moves = nil
	}
	l.moves = append(l.moves, j)
}

// now is the Mark after the last read.
func (l *moveLog) now() Mark {
	return Mark{layout: l.from.layout, seq: l.from.seq + uint64(len(l.moves))}
}

// Mark is where the Table stood at this refresh: a result computed over
// the Cycle's rows is as of Mark.
func (c *Cycle) Mark() Mark { return c.log.now() }

// Moved returns the positions of the rows read after since, up to this
// refresh (a position may come more than once); false when they are not
// known (another layout, or a mark older than the log): the reader then
// computes its result over every row. The zero Mark is never known.
func (c *Cycle) Moved(since Mark) ([]int, bool) {
	l := &c.log
	if since.layout != l.from.layout || since.seq < l.from.seq || since == (Mark{}) {
		return nil, false
	}
	n := since.seq - l.from.seq
	if n > uint64(len(l.moves)) {
		return nil, false
	}
	return l.moves[n:], true
}
