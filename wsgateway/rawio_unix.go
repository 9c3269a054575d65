//go:build unix

package wsgateway

import "syscall"

// rawIO says the connections of TCP sockets are read and written with
// read(2) and write(2) (readRaw, writeRaw): on Unix systems.
const rawIO = true

func sysRead(fd uintptr, b []byte) (int, error)  { return syscall.Read(int(fd), b) }
func sysWrite(fd uintptr, b []byte) (int, error) { return syscall.Write(int(fd), b) }
