package registry

import "time"

// Queue locks serve orderly consumption in clustering mode
// (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ): a consumer pulls a queue only while it
// holds the queue's lock for its group, so one queue is consumed by one
// client at a time. A lock belongs to (group, queue) and is held by one
// client id until it is unlocked, its holder leaves, or it goes
// Options.LockExpiry without renewal.

type lockKey struct {
	group string
	q     Queue
}

type lockEntry struct {
	owner   ClientID
	renewed time.Time
}

func (r *Registry) lockExpired(e *lockEntry, now time.Time) bool {
	return now.Sub(e.renewed) > r.opts.LockExpiry
}

// Lock tries to lock queues of a group for a client and returns the queues
// the client now holds, in the order given: queues that were free, whose
// lock expired, or that the client already held (their lock is renewed).
// Queues held by another client are left out. The client need not be
// registered; such a lock is only ever released by Unlock or expiry.
func (r *Registry) Lock(group string, id ClientID, qs []Queue) (locked []Queue) {
	if group == "" || id == "" || len(qs) == 0 {
		return nil
	}
	now := r.opts.Now()
	r.lockMu.Lock()
	defer r.lockMu.Unlock()
	for i, q := range qs {
		k := lockKey{group, q}
		e := r.locks[k]
		switch {
		case e == nil:
			r.locks[k] = &lockEntry{owner: id, renewed: now}
			r.own(id, k)
		case e.owner == id:
			// Renew, even when expired: nobody took it meanwhile.
			e.renewed = now
		case !r.lockExpired(e, now):
			continue
		default:
			r.disown(e.owner, k)
			e.owner, e.renewed = id, now
			r.own(id, k)
		}
		if locked == nil {
			locked = make([]Queue, 0, len(qs)-i)
		}
		locked = append(locked, q)
	}
	return locked
}

// Unlock releases the client's locks on queues of a group. Locks held by
// other clients are left alone.
func (r *Registry) Unlock(group string, id ClientID, qs []Queue) {
	r.lockMu.Lock()
	defer r.lockMu.Unlock()
	for _, q := range qs {
		k := lockKey{group, q}
		if e := r.locks[k]; e != nil && e.owner == id {
			delete(r.locks, k)
			r.disown(id, k)
		}
	}
}

// LockedBy returns the client holding a live lock on a group's queue.
func (r *Registry) LockedBy(group string, q Queue) (ClientID, bool) {
	now := r.opts.Now()
	r.lockMu.Lock()
	defer r.lockMu.Unlock()
	e := r.locks[lockKey{group, q}]
	if e == nil || r.lockExpired(e, now) {
		return "", false
	}
	return e.owner, true
}

// own and disown keep r.owned in step with r.locks; r.lockMu is held.
func (r *Registry) own(id ClientID, k lockKey) {
	set := r.owned[id]
	if set == nil {
		set = make(map[lockKey]struct{})
		r.owned[id] = set
	}
	set[k] = struct{}{}
}

func (r *Registry) disown(id ClientID, k lockKey) {
	if set := r.owned[id]; set != nil {
		delete(set, k)
		if len(set) == 0 {
			delete(r.owned, id)
		}
	}
}

// releaseLocks drops the client's locks in group, or in every group when
// group is empty. Called with r.mu held (lock order: mu, then lockMu).
func (r *Registry) releaseLocks(id ClientID, group string) {
	r.lockMu.Lock()
	defer r.lockMu.Unlock()
	set := r.owned[id]
	for k := range set {
		if group == "" || k.group == group {
			delete(r.locks, k)
			delete(set, k)
		}
	}
	if set != nil && len(set) == 0 {
		delete(r.owned, id)
	}
}

// purgeLocks discards expired locks; an expired lock is free anyway.
func (r *Registry) purgeLocks(now time.Time) {
	r.lockMu.Lock()
	defer r.lockMu.Unlock()
	for k, e := range r.locks {
		if r.lockExpired(e, now) {
			delete(r.locks, k)
			r.disown(e.owner, k)
		}
	}
}
