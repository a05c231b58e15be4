// Package engine is the broker core of Karman.
package engine
