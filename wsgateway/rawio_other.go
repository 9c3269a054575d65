//go:build !unix

package wsgateway

import "errors"

// rawIO says the connections of TCP sockets are read and written with
// read(2) and write(2): not on this system, where they go through
// net.Conn's Read and Write.
const rawIO = false

var errNoRawIO = errors.New("wsgateway: no raw socket I/O on this system")

func sysRead(uintptr, []byte) (int, error)  { return 0, errNoRawIO }
func sysWrite(uintptr, []byte) (int, error) { return 0, errNoRawIO }
