package engine

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/engine/pop"
)

// Metadata is what a replica needs of its master besides the log: the
// topics, the consumer groups, the committed consumer offsets and the pop
// consumers' states.
type Metadata struct {
	Topics  []meta.Topic           `json:"topics"`
	Groups  []meta.Group           `json:"groups"`
	Offsets []meta.CommittedOffset `json:"offsets"`
	// PopStates are the pop consumers' states (what each group was
	// handed, until when, and what it acknowledged), as last saved, so
	// that a promoted replica neither redelivers what was acknowledged nor
	// loses what is in flight.
	PopStates []meta.PopRecord `json:"popStates,omitempty"`
	// PopHandleKey authenticates receipt handles: with the master's, a
	// promoted replica accepts the handles its master issued.
	PopHandleKey []byte `json:"popHandleKey,omitempty"`
}

// Metadata returns a snapshot of the engine's topics, groups and
// committed offsets, for its replicas.
func (e *Engine) Metadata() (Metadata, error) {
	if err := e.checkOpen(); err != nil {
		return Metadata{}, err
	}
	md := Metadata{Topics: e.meta.Topics(), Groups: e.meta.Groups()}
	err := e.meta.AllOffsets(func(c meta.CommittedOffset) bool {
		md.Offsets = append(md.Offsets, c)
		return true
	})
	if err != nil {
		return Metadata{}, fmt.Errorf("engine: metadata: %w", err)
	}
	// Pop states as they are now: the changed ones are saved first. One
	// that cannot be (a full disk) stays dirty and goes with a later
	// snapshot.
	_ = e.flushPops(false)
	err = e.meta.AllPopStates(func(r meta.PopRecord) bool {
		md.PopStates = append(md.PopStates, r)
		return true
	})
	if err != nil {
		return Metadata{}, fmt.Errorf("engine: metadata: %w", err)
	}
	key, ok, err := e.meta.Secret(popKeyMetaHandles)
	if err != nil {
		return Metadata{}, fmt.Errorf("engine: metadata: %w", err)
	}
	if ok {
		md.PopHandleKey = key
	}
	return md, nil
}

// ApplyMetadata makes a replica's topics, groups and committed offsets
// those of its master's snapshot md: topics and groups are created or
// updated to match, offsets set as the master has them (ahead of what
// the replica holds yet, too: it will). Topics and groups the master no
// longer has are kept. A master refuses it (ErrNotReplica); a topic or
// group that fails validation is skipped and reported in the error,
// after the rest are applied.
func (e *Engine) ApplyMetadata(md Metadata) error {
	if err := e.checkOpen(); err != nil {
		return err
	}
	if e.Role() != RoleReplica {
		return fmt.Errorf("%w: a master's metadata is its own", ErrNotReplica)
	}
	var errs []error
	for _, t := range md.Topics {
		cur, err := e.meta.Topic(t.Name)
		if err == nil && reflect.DeepEqual(cur, t) {
			continue
		}
		if err := validateTopicConfig(&t); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := e.putTopic(t); err != nil {
			return fmt.Errorf("engine: apply metadata: topic %s: %w", t.Name, err)
		}
	}
	for _, g := range md.Groups {
		cur, err := e.meta.Group(g.Name)
		if err == nil && reflect.DeepEqual(cur, g) {
			continue
		}
		if err := validateGroupConfig(g); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := e.meta.PutGroup(g); err != nil {
			return fmt.Errorf("engine: apply metadata: group %s: %w", g.Name, err)
		}
	}
	for _, c := range md.Offsets {
		if cur, err := e.meta.Offset(c.Group, c.Topic, c.Queue); err == nil && cur == c.Offset {
			continue
		}
		if c.Offset < 0 || c.Queue < 0 {
			errs = append(errs, fmt.Errorf("%w: offset %d of %s in %s/%d", ErrInvalidArgument, c.Offset, c.Group, c.Topic, c.Queue))
			continue
		}
		if err := e.meta.CommitOffset(c.Group, c.Topic, c.Queue, c.Offset); err != nil {
			return fmt.Errorf("engine: apply metadata: offset of %s in %s/%d: %w", c.Group, c.Topic, c.Queue, err)
		}
	}
	var pops []meta.PopRecord
	for _, r := range md.PopStates {
		if cur, ok, err := e.meta.PopState(r.Group, r.Topic, r.Queue); err == nil && ok && bytes.Equal(cur, r.State) {
			continue
		}
		var st pop.Queue
		if r.Queue < 0 || st.UnmarshalBinary(r.State) != nil {
			errs = append(errs, fmt.Errorf("%w: pop state of %s in %s/%d", ErrInvalidArgument, r.Group, r.Topic, r.Queue))
			continue
		}
		r.Offset = -1 // offsets are applied above
		pops = append(pops, r)
	}
	if len(pops) > 0 {
		// Under popSaveMu: a flush that read a state held in memory (a
		// demoted master's) before it is dropped here must not write it
		// over the master's.
		e.popSaveMu.Lock()
		err := e.meta.SavePopStates(pops, false)
		if err == nil {
			// A state held in memory is stale now.
			stale := make(map[popKey]bool, len(pops))
			for _, r := range pops {
				stale[popKey{r.Group, r.Topic, r.Queue}] = true
			}
			e.dropPops(func(k popKey) bool { return stale[k] })
		}
		e.popSaveMu.Unlock()
		if err != nil {
			return fmt.Errorf("engine: apply metadata: pop states: %w", err)
		}
	}
	if len(md.PopHandleKey) > 0 {
		cur, ok, err := e.meta.Secret(popKeyMetaHandles)
		if err != nil {
			return fmt.Errorf("engine: apply metadata: %w", err)
		}
		if !ok || !bytes.Equal(cur, md.PopHandleKey) {
			// Used from the promotion on (Promote reloads it).
			if err := e.meta.PutSecret(popKeyMetaHandles, md.PopHandleKey); err != nil {
				return fmt.Errorf("engine: apply metadata: %w", err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("engine: apply metadata: %d entries skipped: %w", len(errs), errs[0])
	}
	return nil
}
