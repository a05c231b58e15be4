package filter

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestCache(t *testing.T) {
	c := NewCache(2)
	a1, err := c.Get("g", "t", "a > 1")
	if err != nil {
		t.Fatal(err)
	}
	if a2, _ := c.Get("g", "t", "a > 1"); a2 != a1 {
		t.Error("a second Get compiled again")
	}
	if other, _ := c.Get("g2", "t", "a > 1"); other == a1 {
		t.Error("another group shares the entry")
	}
	if c.Len() != 2 {
		t.Errorf("Len = %d, want 2", c.Len())
	}
	// g/t/a > 1 was used before g2/t/a > 1: it goes first.
	if _, err := c.Get("g", "t2", "a > 1"); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 2 {
		t.Errorf("Len = %d, want 2 (bounded)", c.Len())
	}
	if again, _ := c.Get("g", "t", "a > 1"); again == a1 {
		t.Error("the least recently used entry was kept")
	}
}

func TestCacheKeepsErrors(t *testing.T) {
	c := NewCache(0)
	_, err1 := c.Get("g", "t", "a >")
	_, err2 := c.Get("g", "t", "a >")
	if !errors.Is(err1, ErrSyntax) {
		t.Fatalf("Get of a bad expression = %v, want ErrSyntax", err1)
	}
	if err1 != err2 {
		t.Error("the error was not cached")
	}
	if c.Len() != 1 {
		t.Errorf("Len = %d, want 1", c.Len())
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := NewCache(16)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				expr := fmt.Sprintf("a > %d", i%32)
				q, err := c.Get("g", "t", expr)
				if err != nil {
					t.Error(err)
					return
				}
				if q.Match(PropertyMap{"a": "100"}) != true {
					t.Errorf("%s does not match a = 100", expr)
					return
				}
			}
		}()
	}
	wg.Wait()
	if c.Len() > 16 {
		t.Errorf("Len = %d, above the bound", c.Len())
	}
}
