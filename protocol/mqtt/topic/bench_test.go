package topic

import (
	"fmt"
	"testing"
)

// benchTree holds 10,000 filters in the shape of an IoT fleet: 9,000
// exact device topics, 900 "+" filters, 100 "#" filters.
func benchTree() *Tree[int, byte] {
	var tr Tree[int, byte]
	id := 0
	for i := 0; i < 9000; i++ {
		tr.Add(fmt.Sprintf("site/%d/device/%d/temperature", i%100, i), id, 1)
		id++
	}
	for i := 0; i < 900; i++ {
		tr.Add(fmt.Sprintf("site/%d/device/+/temperature", i%100), id, 1)
		id++
	}
	for i := 0; i < 100; i++ {
		tr.Add(fmt.Sprintf("site/%d/#", i), id, 1)
		id++
	}
	return &tr
}

func BenchmarkTreeMatch10k(b *testing.B) {
	tr := benchTree()
	buf := make([]Sub[int, byte], 0, 64)
	name := "site/42/device/4242/temperature"
	if n := len(tr.Match(name, nil)); n != 11 {
		b.Fatalf("%d matches, want 11", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		buf = tr.Match(name, buf[:0])
	}
}

func BenchmarkTreeMatch10kParallel(b *testing.B) {
	tr := benchTree()
	name := "site/42/device/4242/temperature"
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]Sub[int, byte], 0, 64)
		for pb.Next() {
			buf = tr.Match(name, buf[:0])
		}
	})
}

// BenchmarkMatchLinear10k is the baseline the tree saves: Match against
// every filter.
func BenchmarkMatchLinear10k(b *testing.B) {
	var filters []string
	for i := 0; i < 9000; i++ {
		filters = append(filters, fmt.Sprintf("site/%d/device/%d/temperature", i%100, i))
	}
	for i := 0; i < 1000; i++ {
		filters = append(filters, fmt.Sprintf("site/%d/device/+/temperature", i%100))
	}
	name := "site/42/device/4242/temperature"
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, f := range filters {
			if Match(f, name) {
				n++
			}
		}
	}
}
