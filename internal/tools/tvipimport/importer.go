package tvipimport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Options configure an import (or a check, Verify).
type Options struct {
	// Source is the server copied from (its Provider API), Target the tvsm
	// node copied to (a superadmin: it reserves ids and creates with them).
	Source, Target Endpoint
	// HTTP is the client of both (default: a minute's timeout per request,
	// and an idle connection kept for every worker).
	HTTP  *http.Client
	Retry Retry
	// PageSize is the number of objects asked per page (default 500).
	PageSize int
	// Workers write to the target at once (default 32: the node commits
	// concurrent writes together, one fsync for many).
	Workers int
	// Pins are passwords (pin_md5) by login, for accounts the source gives
	// without one (TVIP never answers pin_md5).
	Pins map[string]string
	// Progress is told how far the import got; nil tells nothing.
	Progress Progress
}

// Progress follows an import: Start for each resource once its source
// objects are read (total of them), Add as they are done, Done with the
// resource's report.
type Progress interface {
	Start(resource string, total int)
	Add(n int)
	Done(r ResourceReport)
}

// ResourceReport is what became of one resource's objects.
type ResourceReport struct {
	Name string
	// Read objects from the source; Created, Changed (updated with the
	// fields that differed), Unchanged (already alike), Deleted (imported
	// before, gone at the source since) and Refused at the target.
	Read, Created, Changed, Unchanged, Deleted, Refused int
	// Skipped says why the resource was not copied at all (the source does
	// not serve it); not a failure.
	Skipped string
	// Failed says why the resource stopped before its end (its read, or
	// the reservation of its ids, failed after the retries).
	Failed   string
	Refusals []Refusal
}

// Refusal is an object the target did not take, and why.
type Refusal struct {
	ID     int64
	Reason string
}

// Report is what an import did.
type Report struct {
	Resources []ResourceReport
	// WithoutPassword counts the source's accounts no pin of Options.Pins
	// matched: they are imported without a password (no device logs in
	// until one is set). PinsSent counts the accounts given one.
	WithoutPassword, PinsSent int
}

// OK reports whether every object was taken and every resource read to its
// end.
func (r Report) OK() bool {
	for _, res := range r.Resources {
		if res.Refused > 0 || res.Failed != "" {
			return false
		}
	}
	return true
}

// Writes counts the creates, updates and deletes the import made.
func (r Report) Writes() int {
	n := 0
	for _, res := range r.Resources {
		n += res.Created + res.Changed + res.Deleted
	}
	return n
}

type importer struct {
	o              Options
	source, target *client
	mu             sync.Mutex // guards the report's counters
	report         Report
	// copied keeps what the delete pass needs of each resource read to
	// its end.
	copied map[string]*copied
}

type copied struct {
	r      resource
	source map[int64]bool
	extra  []int64 // imported at the target, absent from the source list
}

func (o Options) withDefaults() Options {
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.Workers <= 0 {
		o.Workers = 32
	}
	if o.HTTP == nil {
		// Go's default transport keeps two idle connections a host: the
		// other workers would each open (and the node accept) a new
		// connection for every object.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = o.Workers + 4
		o.HTTP = &http.Client{Timeout: time.Minute, Transport: t}
	}
	return o
}

// Import copies every resource of the source into the target, ids kept.
// The error is for what stops the whole import (the context, the target's
// answers to its superadmin); what befalls single objects and resources is
// in the report.
func Import(ctx context.Context, o Options) (Report, error) {
	o = o.withDefaults()
	im := &importer{o: o, source: newClient(o.Source, o.HTTP, o.Retry), target: newClient(o.Target, o.HTTP, o.Retry),
		copied: map[string]*copied{}}
	if err := im.target.call(ctx, http.MethodPost, "/api/admin/import/ids", nil, map[string]any{"kind": "account"}, nil); err != nil {
		return im.report, fmt.Errorf("the target refuses to import: %w", err)
	}
	for _, r := range resources {
		rep := im.copyResource(ctx, r)
		if err := ctx.Err(); err != nil {
			return im.report, err
		}
		im.report.Resources = append(im.report.Resources, rep)
	}
	// Deletes last, and in the reverse order: what refers to an object
	// goes before it. When more objects are gone than the source lists
	// (at least 10), the source is more likely another server than one
	// that deleted most of its base: nothing is deleted.
	gone, listed := 0, 0
	for _, c := range im.copied {
		gone, listed = gone+len(c.extra), listed+len(c.source)
	}
	if gone >= 10 && gone > listed {
		for i := range im.report.Resources {
			rep := &im.report.Resources[i]
			if c := im.copied[rep.Name]; c != nil && len(c.extra) > 0 {
				rep.Failed = fmt.Sprintf("%d objects imported before are not at the source, which lists %d objects in all: nothing deleted, "+
					"as --from may name another server than the first import's; delete them at the node if they are really gone", len(c.extra), listed)
			}
		}
		return im.report, ctx.Err()
	}
	for i := len(resources) - 1; i >= 0; i-- {
		c := im.copied[resources[i].name]
		if c == nil || len(c.extra) == 0 {
			continue
		}
		rep := &im.report.Resources[i]
		im.deleteGone(ctx, c, rep)
		if o.Progress != nil {
			o.Progress.Done(*rep)
		}
	}
	return im.report, ctx.Err()
}

// copyResource copies one resource: reads both sides, reserves the
// source's ids at the target, then creates, updates or leaves each object.
func (im *importer) copyResource(ctx context.Context, r resource) ResourceReport {
	rep := ResourceReport{Name: r.name}
	src, err := im.source.list(ctx, "/api/provider/"+r.name, im.o.PageSize)
	if errors.Is(err, errNotServed) {
		rep.Skipped = "the source does not serve /api/provider/" + r.name + " (404)"
		im.done(rep)
		return rep
	}
	rep.Read = len(src)
	if err != nil {
		rep.Failed = "reading the source: " + err.Error() + "; run the import again to resume"
		im.done(rep)
		return rep
	}
	tgt, err := im.target.list(ctx, "/api/provider/"+r.name, im.o.PageSize)
	if err != nil {
		rep.Failed = "reading the target: " + err.Error()
		im.done(rep)
		return rep
	}
	byID := make(map[int64]object, len(tgt))
	for _, t := range tgt {
		if id, ok := t.id(); ok {
			byID[id] = t
		}
	}
	var top int64
	for _, s := range src {
		if id, ok := s.id(); ok {
			top = max(top, id)
		}
	}
	var ranges importRanges
	if err := im.target.call(ctx, http.MethodPost, "/api/admin/import/ids", nil,
		map[string]any{"kind": r.kind, "through": top}, &ranges); err != nil {
		rep.Failed = "reserving its ids at the target: " + err.Error()
		im.done(rep)
		return rep
	}
	if im.o.Progress != nil {
		im.o.Progress.Start(r.name, len(src))
	}

	type task struct {
		id     int64
		src    object
		update []string // nil: create
	}
	var tasks []task
	seen := make(map[int64]bool, len(src))
	for _, s := range src {
		id, ok := s.id()
		if !ok {
			rep.refuse(0, fmt.Sprintf("an object without a valid id: %s", show(map[string]any(s))))
			continue
		}
		if seen[id] {
			rep.refuse(id, "the source lists this id twice")
			continue
		}
		seen[id] = true
		t, exists := byID[id]
		diff := r.differs(s, t)
		if !exists && r.name == "device_subscriptions" && im.copied["account_subscriptions"] != nil && im.copied["account_subscriptions"].source[id] {
			rep.refuse(id, fmt.Sprintf("tvsm numbers account and device subscriptions in one series, and account subscription %d has this id", id))
			continue
		}
		switch {
		case !exists && ranges.imported(id):
			tasks = append(tasks, task{id: id, src: s})
		case !exists:
			rep.refuse(id, fmt.Sprintf("the target handed out %s id %d itself (it was not free for import when the import reserved its ids)", r.kind, id))
		case len(diff) == 0 && im.pin(r, s) != "":
			// Unchanged, but for its password, which no answer shows: sent
			// again, it appends nothing when it is the same.
			tasks = append(tasks, task{id: id, src: s, update: []string{}})
		case len(diff) == 0:
			rep.Unchanged++
		case ranges.imported(id):
			tasks = append(tasks, task{id: id, src: s, update: diff})
		default:
			f := diff[0]
			rep.refuse(id, fmt.Sprintf("the target holds another %s under this id (%s: %s at the source, %s at the target)", r.kind, f, show(s[f]), show(t[f])))
		}
	}
	if r.name == "accounts" {
		im.countPins(src)
	}
	if im.o.Progress != nil {
		im.o.Progress.Add(len(src) - len(tasks))
	}

	work := make(chan task)
	var wg sync.WaitGroup
	for range im.o.Workers {
		wg.Go(func() {
			for t := range work {
				var err error
				if t.update == nil {
					err = im.create(ctx, r, t.id, t.src)
				} else {
					err = im.update(ctx, r, t.id, t.src, t.update)
				}
				im.mu.Lock()
				switch {
				case err != nil:
					rep.refuse(t.id, err.Error())
				case t.update == nil:
					rep.Created++
				case len(t.update) == 0:
					rep.Unchanged++
				default:
					rep.Changed++
				}
				im.mu.Unlock()
				if im.o.Progress != nil {
					im.o.Progress.Add(1)
				}
			}
		})
	}
	for _, t := range tasks {
		select {
		case work <- t:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	slices.SortFunc(rep.Refusals, func(a, b Refusal) int { return cmp.Compare(a.ID, b.ID) })

	c := &copied{r: r, source: seen}
	for id := range byID {
		if !seen[id] && ranges.imported(id) {
			c.extra = append(c.extra, id)
		}
	}
	slices.Sort(c.extra)
	im.copied[r.name] = c
	im.done(rep)
	return rep
}

func (im *importer) done(rep ResourceReport) {
	if im.o.Progress != nil {
		im.o.Progress.Done(rep)
	}
}

func (rep *ResourceReport) refuse(id int64, reason string) {
	rep.Refused++
	rep.Refusals = append(rep.Refusals, Refusal{ID: id, Reason: reason})
}

// create creates the source's object at the target under its id.
func (im *importer) create(ctx context.Context, r resource, id int64, s object) error {
	fields := map[string]any{}
	for _, f := range r.fields {
		if v, ok := s[f]; ok && v != nil {
			fields[f] = v
		}
	}
	body := fields
	if r.body != nil {
		body = r.body(fields)
	}
	if r.name == "accounts" {
		body["pin_md5"] = im.pin(r, s) // "": an account without a password
	}
	header := http.Header{"X-Tvsm-Import-Id": {strconv.FormatInt(id, 10)}}
	a, err := im.target.do(ctx, http.MethodPost, r.write, header, body)
	if err != nil {
		return err
	}
	if a.status/100 == 2 {
		return nil
	}
	if a.status == http.StatusConflict && a.attempts > 1 {
		// An earlier attempt may have created it, its answer lost.
		var got object
		if im.target.call(ctx, http.MethodGet, "/api/provider/"+r.name+"/"+strconv.FormatInt(id, 10), nil, nil, &got) == nil &&
			len(r.differs(s, got)) == 0 {
			return nil
		}
	}
	return errors.New(cause(a.body))
}

// update sets the fields that differ at the target to the source's values.
func (im *importer) update(ctx context.Context, r resource, id int64, s object, diff []string) error {
	fields := make(map[string]any, len(diff))
	for _, f := range diff {
		fields[f] = s[f]
	}
	body := fields
	if r.body != nil {
		body = r.body(fields)
	}
	if pin := im.pin(r, s); pin != "" {
		body["pin_md5"] = pin
	}
	path := r.write + "/" + strconv.FormatInt(id, 10)
	var se *StatusError
	if err := im.target.call(ctx, http.MethodPut, path, nil, body, nil); errors.As(err, &se) {
		return errors.New(se.Cause)
	} else if err != nil {
		return err
	}
	return nil
}

// pin is the password Options.Pins gives an account of the source, "" for
// none (and for other resources).
func (im *importer) pin(r resource, s object) string {
	if r.name != "accounts" {
		return ""
	}
	login, _ := s["login"].(string)
	return im.o.Pins[login]
}

// countPins counts the source's accounts given a password and those
// without.
func (im *importer) countPins(src []object) {
	for _, s := range src {
		login, _ := s["login"].(string)
		if _, ok := im.o.Pins[login]; ok {
			im.report.PinsSent++
		} else {
			im.report.WithoutPassword++
		}
	}
}

// deleteGone deletes the objects imported before that the source listed no
// more, once the source confirms each is gone (a list read while the source
// changes may miss an object).
func (im *importer) deleteGone(ctx context.Context, c *copied, rep *ResourceReport) {
	for _, id := range c.extra {
		path := "/" + strconv.FormatInt(id, 10)
		a, err := im.source.do(ctx, http.MethodGet, "/api/provider/"+c.r.name+path, nil, nil)
		if err != nil || a.status != http.StatusNotFound {
			continue // still there, or unknown: left for the next run
		}
		a, err = im.target.do(ctx, http.MethodDelete, c.r.write+path, nil, nil)
		switch {
		case err != nil:
			rep.refuse(id, "deleting it (gone at the source): "+err.Error())
		case a.status/100 == 2 || a.status == http.StatusNotFound:
			rep.Deleted++
		default:
			rep.refuse(id, "deleting it (gone at the source): "+cause(a.body))
		}
	}
}

// importRanges is the target's answer to POST /api/admin/import/ids.
type importRanges struct {
	Top    int64 `json:"top"`
	Ranges []struct {
		From int64 `json:"from"`
		To   int64 `json:"to"`
	} `json:"ranges"`
}

func (r importRanges) imported(id int64) bool {
	for _, x := range r.Ranges {
		if id >= x.From && id <= x.To {
			return true
		}
	}
	return false
}
