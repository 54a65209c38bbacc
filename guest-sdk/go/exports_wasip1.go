//go:build wasip1

package sdk

import "unsafe"

// The module's exports: alloc, dealloc, manifest and call (go build -buildmode=c-shared also
// exports memory and _initialize, which runs the package inits, where Register is called).
//
// Memory: every buffer handed to the host (from alloc, or the answer of manifest or call) is a
// Go slice kept alive in pinned, keyed by its address (Go's collector does not move objects).
// The host never frees call's answers, and an instance serves many calls, so each call first
// drops what the previous one pinned; memory does not grow per call.

// pinned holds the buffers the host may still read or write: a handful at most (a request, an
// answer, a host function's), so a slice searched from the end costs less than a map's hashing.
var pinned [][]byte

// alloc(len) -> ptr: a buffer the host writes a request (or a host function's answer) into.
// Zero bytes give pointer 0.
//
//go:wasmexport alloc
func alloc(n uint32) uint32 {
	if n == 0 {
		return 0
	}
	return pin(make([]byte, n))
}

// dealloc(ptr, len) frees a buffer from alloc, manifest or call.
//
//go:wasmexport dealloc
func dealloc(ptr, _ uint32) {
	unpin(ptr)
}

// manifest() -> packed: the registered strategy's encoded manifest.
//
//go:wasmexport manifest
func manifest() uint64 {
	return hand(ManifestBytes())
}

// call(ptr, len) -> packed: answers the request the host wrote at ptr (from alloc(len)).
//
//go:wasmexport call
func call(ptr, n uint32) uint64 {
	request := takeBuffer(ptr, n)
	// The previous call's buffers: the host is done with them.
	clear(pinned)
	pinned = pinned[:0]
	return hand(Handle(request))
}

func pin(b []byte) uint32 {
	pinned = append(pinned, b)
	return address(b)
}

// address is where b's bytes start in the module's linear memory: the pointer the host sees.
func address(b []byte) uint32 {
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// unpin forgets the pinned buffer at ptr and returns it (nil when none is there).
func unpin(ptr uint32) []byte {
	for i := len(pinned) - 1; i >= 0; i-- {
		if b := pinned[i]; address(b) == ptr {
			pinned[i] = pinned[len(pinned)-1]
			pinned[len(pinned)-1] = nil
			pinned = pinned[:len(pinned)-1]
			return b
		}
	}
	return nil
}

// hand pins an answer and packs it as (ptr << 32) | len.
func hand(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(pin(b))<<32 | uint64(len(b))
}

// takeBuffer unpins a buffer from alloc and returns its first n bytes (nil for one this module
// did not hand out).
func takeBuffer(ptr, n uint32) []byte {
	b := unpin(ptr)
	if b == nil || int(n) > len(b) {
		return nil
	}
	return b[:n]
}
