// Package epoll waits on many non-blocking sockets with one goroutine and
// reads and writes them with raw system calls, on Linux. The websocket
// gateway serves its devices' sockets with it, and the device simulator of
// the broadcast benchmark its clients'.
//
// Through the runtime's poller every readable socket wakes a goroutine of
// its own. A Poller instead takes the sockets from the runtime (TakeFD: a
// duplicate of the descriptor, the runtime's one closed) and hands every
// socket ready at a wakeup to one function on one goroutine.
//
// The Poller's goroutine does not block in epoll_wait: a thread blocked in
// a system call must win a processor back when it returns, which on a busy
// machine delayed the first message of a broadcast by tens to hundreds of
// milliseconds. Its epoll descriptor is given to the runtime's poller
// instead (an epoll descriptor is readable while it has events), so the
// goroutine parks like any reader and calls epoll_wait only when that
// returns at once.
//
// Elsewhere than on Linux, Supported is false and New and TakeFD fail.
package epoll
