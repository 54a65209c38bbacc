//go:build wasip1

package sdk

import "unsafe"

// The imports of module "strategy-host". The linker keeps only those the module calls, so a
// module imports get, list or apply only when its code uses Get, List or Apply.

//go:wasmimport strategy-host log
func importLog(level int32, ptr unsafe.Pointer, n int32)

//go:wasmimport strategy-host get
func importGet(ptr unsafe.Pointer, n int32) uint64

//go:wasmimport strategy-host list
func importList(ptr unsafe.Pointer, n int32) uint64

//go:wasmimport strategy-host apply
func importApply(ptr unsafe.Pointer, n int32) uint64

func hostLog(level LogLevel, message string) {
	importLog(int32(level), unsafe.Pointer(unsafe.StringData(message)), int32(len(message)))
}

// hostGet, hostList and hostApply pass an encoded request to their import and take its answer,
// which the host wrote into a buffer it obtained from the alloc export (re-entrantly, during the
// import call).
func hostGet(request []byte) []byte {
	packed := importGet(unsafe.Pointer(unsafe.SliceData(request)), int32(len(request)))
	return takeBuffer(uint32(packed>>32), uint32(packed))
}

func hostList(request []byte) []byte {
	packed := importList(unsafe.Pointer(unsafe.SliceData(request)), int32(len(request)))
	return takeBuffer(uint32(packed>>32), uint32(packed))
}

func hostApply(request []byte) []byte {
	packed := importApply(unsafe.Pointer(unsafe.SliceData(request)), int32(len(request)))
	return takeBuffer(uint32(packed>>32), uint32(packed))
}
