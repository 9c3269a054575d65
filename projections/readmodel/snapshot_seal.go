package readmodel

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"

	"tvsm/domain"
)

// TextSealer seals the personal text of a snapshot's records under their
// subscriber's key, so that a snapshot (and every copy of it) holds no
// personal value in plain text and an erased subscriber's stays unreadable
// in old copies too. The node gives it the keyring of its event store.
type TextSealer interface {
	// SealText encrypts plain under subject's key, bound to what (the
	// record it belongs to). It returns nil, and no error, when the
	// subject was erased.
	SealText(subject int64, what string, plain []byte) ([]byte, error)
	// OpenText decrypts what SealText wrote; erased is set, and plain
	// nil, when the subject's key was erased since.
	OpenText(subject int64, what string, sealed []byte) (plain []byte, erased bool, err error)
}

// SealSnapshots makes the model's snapshots seal their personal text with
// s, and read sealed ones (a snapshot with sealed text cannot be read
// without).
func (m *Model) SealSnapshots(s TextSealer) {
	m.mu.Lock()
	m.sealer = s
	m.mu.Unlock()
}

func (m *Model) snapshotSealer() TextSealer {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.sealer
}

// What the sealed text of a snapshot belongs to, bound into its seal.
const accountText = "readmodel account"

func deviceText(id int64) string { return "readmodel device " + strconv.FormatInt(id, 10) }

func networkText(id int64) string { return "readmodel network " + strconv.FormatInt(id, 10) }

// text writes a record's text, sealed when the encoder seals: an empty
// blob stands for an erased subscriber's.
func (e *encoder) text(subject int64, what, text string) {
	if e.sealer == nil {
		e.str(text)
		return
	}
	sealed, err := e.sealer.SealText(subject, what, []byte(text))
	if err != nil && e.err == nil {
		e.err = fmt.Errorf("seal %s of account %d: %w", what, subject, err)
	}
	e.bytes(sealed)
}

// text reads a record's text of n packed fields, opening it when the
// payload is sealed; an erased subscriber's reads as ErasedValue in every
// field.
func (d *decoder) text(subject int64, what string, n int) string {
	if d.sealer == nil {
		return d.str()
	}
	sealed := d.bytes()
	if d.err != nil {
		return ""
	}
	if len(sealed) == 0 {
		return erasedText(n)
	}
	plain, erased, err := d.sealer.OpenText(subject, what, sealed)
	switch {
	case err != nil:
		d.err = fmt.Errorf("%w: %s of account %d: %w", errSnapshotFormat, what, subject, err)
		return ""
	case erased:
		return erasedText(n)
	}
	return string(plain)
}

// erasedText is n packed fields, each ErasedValue.
func erasedText(n int) string {
	fields := make([]string, n)
	for i := range fields {
		fields[i] = domain.ErasedValue
	}
	return pack(fields)
}

// snapNetwork is the personal part of an account network, sealed.
type snapNetwork struct {
	Network     string  `json:"network"`
	Description *string `json:"description,omitempty"`
}

// networks writes the account networks of a sealed payload.
func (e *encoder) networks(list []snapEntry[int64, domain.AccountNetworks]) {
	e.uvarint(uint64(len(list)))
	for _, p := range list {
		e.varint(p.Key)
		e.uvarint(p.Rev)
		e.uvarint(uint64(len(p.V.Networks)))
		for _, n := range p.V.Networks {
			e.varint(n.ID)
			e.varint(n.Account)
			plain, err := json.Marshal(snapNetwork{Network: n.Network.String(), Description: n.Description})
			if err != nil && e.err == nil {
				e.err = err
			}
			e.text(n.Account, networkText(n.ID), string(plain))
		}
	}
}

// networks reads what encoder.networks wrote. An erased subscriber's
// network is left out: its erasure removed it too.
func (d *decoder) networks() []snapEntry[int64, domain.AccountNetworks] {
	var out []snapEntry[int64, domain.AccountNetworks]
	for n := d.count(); n > 0 && d.err == nil; n-- {
		p := snapEntry[int64, domain.AccountNetworks]{Key: d.varint(), Rev: d.uvarint()}
		p.V.Provider = p.Key
		for m := d.items(); m > 0 && d.err == nil; m-- {
			id, account := d.varint(), d.varint()
			text := d.text(account, networkText(id), 0)
			if d.err != nil || text == "" {
				continue
			}
			var sn snapNetwork
			if err := json.Unmarshal([]byte(text), &sn); err != nil {
				d.err = fmt.Errorf("%w: network %d: %w", errSnapshotFormat, id, err)
				continue
			}
			prefix, err := netip.ParsePrefix(sn.Network)
			if err != nil {
				d.err = fmt.Errorf("%w: network %d: %w", errSnapshotFormat, id, err)
				continue
			}
			p.V.Networks = append(p.V.Networks, domain.AccountNetwork{ID: id, Network: prefix, Account: account, Description: sn.Description})
		}
		out = append(out, p)
	}
	return out
}
