package filter

import (
	"container/list"
	"sync"
)

// DefaultCacheSize is the number of filters a Cache keeps when NewCache is
// given no positive size.
const DefaultCacheSize = 1024

// Cache keeps compiled SQL92 filters per (consumer group, topic,
// expression), so that a subscription is parsed once, and so is a bad one:
// errors are kept too. It holds at most its size, forgetting the least
// recently used entry first. A Cache is safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	max     int
	order   *list.List // of *cacheEntry, most recently used first
	entries map[cacheKey]*list.Element
}

type cacheKey struct{ group, topic, expression string }

type cacheEntry struct {
	key cacheKey
	sql *SQL
	err error
}

// NewCache returns a Cache holding at most max filters (DefaultCacheSize
// if max <= 0).
func NewCache(max int) *Cache {
	if max <= 0 {
		max = DefaultCacheSize
	}
	return &Cache{max: max, order: list.New(), entries: make(map[cacheKey]*list.Element)}
}

// Get returns the compiled filter for expression as used by group on
// topic, compiling it on first use. It returns ParseSQL's error, cached
// like a filter.
func (c *Cache) Get(group, topic, expression string) (*SQL, error) {
	key := cacheKey{group, topic, expression}
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		e := el.Value.(*cacheEntry)
		c.mu.Unlock()
		return e.sql, e.err
	}
	c.mu.Unlock()

	// Compile unlocked; two goroutines may compile the same expression,
	// and the first to finish wins.
	sql, err := ParseSQL(expression)

	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		e := el.Value.(*cacheEntry)
		return e.sql, e.err
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, sql: sql, err: err})
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry).key)
	}
	return sql, err
}

// Len returns the number of filters (and errors) in the cache.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
