// Package dispatch delivers provider commands to the devices connected to
// this node, at most once per device across reconnects, restarts and nodes,
// and appends what happened (claims, expiries, receipts, connections) back
// to the event store. docs/commands.md describes the rules; in short:
//
//   - A Dispatcher follows the command-{send} streams of the log (a
//     projections.Runner) and keeps only the live commands in memory: those
//     whose send time (post_time, or the issue time) is ahead, and those
//     with a ttl that has not passed.
//   - At a command's send time it goes to the target devices connected then;
//     with a ttl also to target devices that connect before the ttl; never
//     after the ttl. The send-time round of a command without ttl is
//     recorded even when it reached no device, so a command handled on time
//     is never delivered again after a restart.
//   - A command without ttl whose send time passed while no node ran (no
//     round recorded) goes, once a node has started, to the target devices
//     connected within LateWindow of its start, then expires
//     (ExpiredMissedSendTime); past LateLimit, or handled more than Grace
//     late by a node that was running, it expires undelivered
//     (ExpiredTooLate).
//   - Before writing to any socket the node appends a CommandsSent claim
//     with the exact revision of command-{send} it knows. Whoever appends
//     first owns a device's delivery; a node that loses the race reads the
//     stream forward and drops the devices claimed meanwhile.
//   - Devices' acks and confirms are batched into receipt-{send}; device
//     connects and disconnects are appended to device-{id}, both off the
//     hub's goroutines through bounded queues.
//   - The live set is saved as a snapshot with its log position every
//     minute and on Close, so pending delayed commands survive a restart.
//
// One goroutine (the loop) owns the command state: it applies log batches,
// runs due timers and handles newly opened connections, in that order of
// arrival, so no lock guards the state and claims of one node never race
// each other.
//
// Wiring (what a node does):
//
//	d, err := dispatch.New(dispatch.Options{Store: store, Registry: reg, Node: "node-1", DataDir: dir})
//	go d.Run(ctx)                 // follow the log until Close
//	... d.Hub().Upgrade(w, r, id) // in GET /api/device/ws, after authentication
//	d.Close()                     // on shutdown: goodbye to devices, flush, snapshot
package dispatch
