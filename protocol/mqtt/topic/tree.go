package topic

import (
	"strings"
	"sync"
)

// Tree maps topic filters to subscribers: for each filter, a set of keys K
// (a session, or a session and share group) with a value V each (the
// subscription options). Shared subscriptions are added under their inner
// filter (see ParseShared), with the group in K or V. The zero Tree is
// empty and ready.
type Tree[K comparable, V any] struct {
	mu   sync.RWMutex
	root node[K, V]
	n    int
}

// Sub is one subscription found by Match.
type Sub[K comparable, V any] struct {
	Filter string
	Key    K
	Value  V
}

type node[K comparable, V any] struct {
	children map[string]*node[K, V]
	plus     *node[K, V]
	hash     *node[K, V]
	filter   string
	subs     map[K]V
}

func (n *node[K, V]) empty() bool {
	return len(n.children) == 0 && n.plus == nil && n.hash == nil && len(n.subs) == 0
}

// Add subscribes key to filter with value, replacing the value of an
// existing subscription of key to the same filter. It reports whether one
// was replaced. The filter must be valid (ValidFilter) and not shared.
func (t *Tree[K, V]) Add(filter string, key K, value V) (replaced bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := &t.root
	rest := filter
	for {
		level, tail, more := strings.Cut(rest, "/")
		var next **node[K, V]
		switch level {
		case "+":
			next = &n.plus
		case "#":
			next = &n.hash
		default:
			c := n.children[level]
			if c == nil {
				if n.children == nil {
					n.children = make(map[string]*node[K, V])
				}
				c = &node[K, V]{}
				n.children[level] = c
			}
			next = &c
		}
		if *next == nil {
			*next = &node[K, V]{}
		}
		n = *next
		if !more {
			break
		}
		rest = tail
	}
	if n.subs == nil {
		n.subs = make(map[K]V)
		n.filter = filter
	}
	_, replaced = n.subs[key]
	n.subs[key] = value
	if !replaced {
		t.n++
	}
	return replaced
}

// Remove removes the subscription of key to filter and reports whether it
// existed. Nodes left empty are freed.
func (t *Tree[K, V]) Remove(filter string, key K) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.remove(&t.root, filter, key)
}

// remove descends one level per call and prunes empty children on the way
// back.
func (t *Tree[K, V]) remove(n *node[K, V], rest string, key K) bool {
	level, tail, more := strings.Cut(rest, "/")
	var c *node[K, V]
	switch level {
	case "+":
		c = n.plus
	case "#":
		c = n.hash
	default:
		c = n.children[level]
	}
	if c == nil {
		return false
	}
	var ok bool
	if more {
		ok = t.remove(c, tail, key)
	} else if _, ok = c.subs[key]; ok {
		delete(c.subs, key)
		t.n--
		if len(c.subs) == 0 {
			c.subs = nil
		}
	}
	if ok && c.empty() {
		switch level {
		case "+":
			n.plus = nil
		case "#":
			n.hash = nil
		default:
			delete(n.children, level)
		}
	}
	return ok
}

// Len returns the number of subscriptions.
func (t *Tree[K, V]) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.n
}

// Match appends to dst every subscription whose filter matches the valid
// topic name and returns the extended slice. A key subscribed through
// several matching filters appears once per filter. Order is unspecified.
func (t *Tree[K, V]) Match(name string, dst []Sub[K, V]) []Sub[K, V] {
	t.mu.RLock()
	defer t.mu.RUnlock()
	sys := name != "" && name[0] == '$'
	return match(&t.root, name, 0, sys, dst)
}

// match visits n for the level of name starting at start; start past the
// end means every level was consumed. sys keeps wildcards at the root from
// matching a $ topic.
func match[K comparable, V any](n *node[K, V], name string, start int, sys bool, dst []Sub[K, V]) []Sub[K, V] {
	if start > len(name) {
		dst = appendSubs(dst, n)
		if n.hash != nil {
			dst = appendSubs(dst, n.hash)
		}
		return dst
	}
	end := strings.IndexByte(name[start:], '/')
	if end < 0 {
		end = len(name)
	} else {
		end += start
	}
	if n.hash != nil && !sys {
		dst = appendSubs(dst, n.hash)
	}
	if c := n.children[name[start:end]]; c != nil {
		dst = match(c, name, end+1, false, dst)
	}
	if n.plus != nil && !sys {
		dst = match(n.plus, name, end+1, false, dst)
	}
	return dst
}

func appendSubs[K comparable, V any](dst []Sub[K, V], n *node[K, V]) []Sub[K, V] {
	for k, v := range n.subs {
		dst = append(dst, Sub[K, V]{Filter: n.filter, Key: k, Value: v})
	}
	return dst
}
