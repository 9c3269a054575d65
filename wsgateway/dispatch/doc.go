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
//     after the ttl. Without a ttl a command handled more than Grace after
//     its send time is dropped, so a restart never replays old commands.
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
