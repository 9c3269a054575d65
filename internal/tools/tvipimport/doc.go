// Package tvipimport copies the objects of a server speaking TVIP's Provider
// API (a TVIP TMS, or another tvsm node) into a tvsm node, every id kept:
// `tvsm import tvip`.
//
// It reads the source through its Provider API only (paged lists, as TVIP's
// SDKs read them) and writes the target through the target's public APIs:
// for each resource it reserves the source's ids at the target
// (POST /api/admin/import/ids), so that no node hands them out afterwards,
// then creates each missing object with the ordinary create carrying
// X-TVSM-Import-ID, and updates each imported object that differs from the
// source with exactly the fields that differ. An object already equal at the
// target is left alone, so a second run appends nothing, and a run after
// changes at the source appends exactly those changes. An id the target
// holds for an object of its own (not imported) is refused and reported
// unless that object is the same.
//
// Every object is one create or one update, so a refusal (bad source data,
// a reference to a missing object, a taken login) never leaves a part of an
// object behind. Reads and writes that fail for want of the network or with
// a 5xx are retried with backoff; what still fails is reported, and a
// re-run resumes.
package tvipimport
