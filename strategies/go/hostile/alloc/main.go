// Command alloc is a hostile fixture: its Validate allocates without bound, keeping every
// block referenced (and touched), so only the host's memory limit ends the call.
package main

import (
	"strategyhost.dev/examples/hostile/widget"
	"strategyhost.dev/sdk"
)

type allocator struct{}

// kept holds every block, so the collector frees none.
var kept [][]byte

func (allocator) Validate(*sdk.Context, *map[string]any) []sdk.FieldError {
	for {
		block := make([]byte, 1<<20)
		for i := 0; i < len(block); i += 4096 {
			block[i] = 1
		}
		kept = append(kept, block)
	}
}

func init() { widget.Register("alloc", allocator{}) }

func main() {}
