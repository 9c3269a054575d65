package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"tvsm/domain"
	"tvsm/domain/domaintest"
)

type sendCase = domaintest.Case[domain.CommandSend, domain.SendCommands]

func sendSpec() domaintest.Spec[domain.CommandSend, domain.SendCommands] {
	return domaintest.For(domain.CommandSendDecider()).Codec(eventRegistry())
}

// raw is a command object as a provider sends it.
func raw(s string) json.RawMessage { return json.RawMessage(s) }

var (
	notifyObject = raw(`{"command":"user_message","type":"notify","text":"Hello","delay":5}`)
	notifySpec   = domain.CommandSpec{Kind: domain.CommandUserMessage, MessageType: domain.MessageNotify, Text: "Hello",
		Delay: ptr(5), Object: notifyObject}
	restartSpec = domain.CommandSpec{Kind: domain.CommandRestart, Object: raw(`{"command":"restart"}`)}
)

// send is a valid send of notifySpec to account 42 by provider 7's admin.
func send(specs ...domain.CommandSpec) domain.SendCommands {
	if len(specs) == 0 {
		specs = []domain.CommandSpec{notifySpec}
	}
	return domain.SendCommands{SendID: 9, Recipients: domain.RecipientAccounts, IDs: []int64{42}, Commands: specs, Scope: ptr[int64](7)}
}

func issuedNotify() domain.CommandsIssued {
	return domain.CommandsIssued{SendID: 9, Recipients: domain.RecipientAccounts, IDs: []int64{42}, Scope: ptr[int64](7),
		IssuedAt: domaintest.Now(),
		Commands: []domain.IssuedCommand{{Kind: domain.CommandUserMessage, MessageType: domain.MessageNotify, Object: notifyObject}}}
}

func TestIssueCommands(t *testing.T) {
	now := domaintest.Now()
	at := now.Add(time.Hour)
	offset := time.FixedZone("MSK", 3*3600)
	confirm := domain.CommandSpec{Kind: domain.CommandUserMessage, MessageType: domain.MessageConfirm, Text: "Pay?", Title: "Bill",
		UseAsPush: ptr(true), PostTime: at.In(offset), TTL: at.Add(time.Hour), Object: raw(`{"command":"user_message","type":"confirm"}`)}
	channel := domain.CommandSpec{Kind: domain.CommandSwitchToChannel, Channel: 3, Object: raw(`{"command":"switch_to_channel","channel":3}`)}
	plain := func(k domain.CommandKind) domain.CommandSpec {
		return domain.CommandSpec{Kind: k, Object: raw(`{"command":"` + string(k) + `"}`)}
	}
	everyKind := send(confirm, channel, plain(domain.CommandRefreshChannelList), plain(domain.CommandReinit),
		plain(domain.CommandRestart), plain(domain.CommandUpdate))
	everyKind.Recipients, everyKind.IDs, everyKind.Scope = domain.RecipientProviders, []int64{7}, nil
	repeated := send()
	repeated.IDs = []int64{42, 43, 42}
	withDups := issuedNotify()
	withDups.IDs = []int64{42, 43}

	sendSpec().Run(t,
		sendCase{Name: "a notify to an account", When: send(), Then: []domain.Event{issuedNotify()}},
		sendCase{
			Name: "every kind in one send, post_time and ttl in UTC",
			When: everyKind,
			Then: []domain.Event{domain.CommandsIssued{SendID: 9, Recipients: domain.RecipientProviders, IDs: []int64{7}, IssuedAt: now,
				Commands: []domain.IssuedCommand{
					{Kind: domain.CommandUserMessage, MessageType: domain.MessageConfirm, PostTime: at, TTL: at.Add(time.Hour), Object: confirm.Object},
					{Kind: domain.CommandSwitchToChannel, Channel: 3, Object: channel.Object},
					{Kind: domain.CommandRefreshChannelList, Object: raw(`{"command":"refresh_channel_list"}`)},
					{Kind: domain.CommandReinit, Object: raw(`{"command":"reinit"}`)},
					{Kind: domain.CommandRestart, Object: raw(`{"command":"restart"}`)},
					{Kind: domain.CommandUpdate, Object: raw(`{"command":"update"}`)},
				}}},
		},
		sendCase{Name: "repeated ids count once", When: repeated, Then: []domain.Event{withDups}},
		sendCase{Name: "a send id is issued once", Given: []domain.Event{issuedNotify()}, When: send(), Err: domain.ErrAlreadyExists},
		sendCase{
			Name:  "deliveries and expiry do not make a send issuable again",
			Given: []domain.Event{issuedNotify(), domain.CommandsSent{SendID: 9, Devices: []int64{1}}, domain.CommandExpired{SendID: 9}},
			When:  send(), Err: domain.ErrAlreadyExists,
		},
		sendCase{Name: "bad fields", When: domain.SendCommands{}, Err: domain.ErrValidation},
	)
}

func TestCommandSendState(t *testing.T) {
	sendSpec().Given(issuedNotify(), domain.CommandsSent{SendID: 9, Devices: []int64{1}}).
		ThenState(t, domain.CommandSend{SendID: 9, IssuedAt: domaintest.Now()})
	if st := domain.CommandSendDecider().Replay(); st.Issued() {
		t.Errorf("empty stream is issued: %+v", st)
	}
	if got := send().Stream(); got != "command-9" {
		t.Errorf("Stream() = %q", got)
	}
}

// TestIssueCommandsValidation names, for each bad input, exactly the
// fields the error must name, as on the wire.
func TestIssueCommandsValidation(t *testing.T) {
	now := domaintest.Now()
	with := func(edit func(*domain.CommandSpec)) func(*domain.SendCommands) {
		return func(c *domain.SendCommands) {
			spec := notifySpec
			edit(&spec)
			c.Commands = []domain.CommandSpec{restartSpec, spec}
		}
	}
	many := make([]int64, domain.MaxSendIDs+1)
	for i := range many {
		many[i] = int64(i + 1)
	}
	tests := []struct {
		name   string
		edit   func(*domain.SendCommands)
		fields []string
	}{
		{"empty send", func(c *domain.SendCommands) { *c = domain.SendCommands{} }, []string{"send_id", "recipients", "ids", "commands"}},
		{"unknown recipients", func(c *domain.SendCommands) { c.Recipients = "channels" }, []string{"recipients"}},
		{"broadcast", func(c *domain.SendCommands) { c.Broadcast = true }, []string{"broadcast"}},
		{"no ids", func(c *domain.SendCommands) { c.IDs = []int64{} }, []string{"ids"}},
		{"too many ids", func(c *domain.SendCommands) { c.IDs = many }, []string{"ids"}},
		{"non-positive ids by index", func(c *domain.SendCommands) { c.IDs = []int64{1, 0, 2, -3} }, []string{"ids[1]", "ids[3]"}},
		{"no commands", func(c *domain.SendCommands) { c.Commands = nil }, []string{"commands"}},
		{"too many commands", func(c *domain.SendCommands) {
			c.Commands = make([]domain.CommandSpec, domain.MaxSendCommands+1)
			for i := range c.Commands {
				c.Commands[i] = restartSpec
			}
		}, []string{"commands"}},
		{"message without type", with(func(s *domain.CommandSpec) { s.MessageType = "" }), []string{"commands[1].type"}},
		{"message of unknown type", with(func(s *domain.CommandSpec) { s.MessageType = "alert" }), []string{"commands[1].type"}},
		{"message without text", with(func(s *domain.CommandSpec) { s.Text = "" }), []string{"commands[1].text"}},
		{"text too long", with(func(s *domain.CommandSpec) { s.Text = strings.Repeat("я", domain.MaxCommandTextLen+1) }), []string{"commands[1].text"}},
		{"text with a bell", with(func(s *domain.CommandSpec) { s.Text = "a\ab" }), []string{"commands[1].text"}},
		{"title too long", with(func(s *domain.CommandSpec) { s.Title = strings.Repeat("x", domain.MaxCommandTitleLen+1) }), []string{"commands[1].title"}},
		{"title with a line break", with(func(s *domain.CommandSpec) { s.Title = "a\nb" }), []string{"commands[1].title"}},
		{"negative delay", with(func(s *domain.CommandSpec) { s.Delay = ptr(-1) }), []string{"commands[1].delay"}},
		{"delay over a day", with(func(s *domain.CommandSpec) { s.Delay = ptr(domain.MaxCommandDelay + 1) }), []string{"commands[1].delay"}},
		{"switch without channel", with(func(s *domain.CommandSpec) {
			*s = domain.CommandSpec{Kind: domain.CommandSwitchToChannel, Object: raw(`{}`)}
		}),
			[]string{"commands[1].channel"}},
		{"switch to channel -1", with(func(s *domain.CommandSpec) {
			*s = domain.CommandSpec{Kind: domain.CommandSwitchToChannel, Channel: -1, Object: raw(`{}`)}
		}), []string{"commands[1].channel"}},
		{"no command", with(func(s *domain.CommandSpec) { *s = domain.CommandSpec{Object: raw(`{}`)} }), []string{"commands[1].command"}},
		{"unknown command", with(func(s *domain.CommandSpec) { s.Kind = "reboot" }), []string{"commands[1].command"}},
		{"object missing", with(func(s *domain.CommandSpec) { s.Object = nil }), []string{"commands[1].command"}},
		{"object is a list", with(func(s *domain.CommandSpec) { s.Object = raw(`[1]`) }), []string{"commands[1].command"}},
		{"object too big", with(func(s *domain.CommandSpec) {
			s.Object = raw(`{"text":"` + strings.Repeat("x", domain.MaxCommandObjectSize) + `"}`)
		}), []string{"commands[1].command"}},
		{"post_time over a year ahead", with(func(s *domain.CommandSpec) { s.PostTime = now.Add(domain.MaxCommandHorizon + time.Hour) }),
			[]string{"commands[1].post_time"}},
		{"ttl passed", with(func(s *domain.CommandSpec) { s.TTL = now }), []string{"commands[1].ttl"}},
		{"ttl before post_time", with(func(s *domain.CommandSpec) { s.PostTime, s.TTL = now.Add(2*time.Hour), now.Add(time.Hour) }),
			[]string{"commands[1].ttl"}},
		{"ttl in milliseconds", with(func(s *domain.CommandSpec) { s.TTL = time.Unix(now.Unix()*1000, 0) }), []string{"commands[1].ttl"}},
		{"every command reported", func(c *domain.SendCommands) {
			c.Commands = []domain.CommandSpec{{Kind: "x", Object: raw(`{}`)}, {Kind: domain.CommandUserMessage, Object: raw(`{}`)}}
		}, []string{"commands[0].command", "commands[1].type", "commands[1].text"}},
	}
	d := domain.CommandSendDecider()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := send()
			tt.edit(&c)
			wantFields(t, decideErr(t, d, c), tt.fields...)
		})
	}
}

// A list of thousands of bad ids gets an answer of readable size.
func TestIssueCommandsReportsFewBadIDs(t *testing.T) {
	c := send()
	c.IDs = make([]int64, 1000)
	err := decideErr(t, domain.CommandSendDecider(), c)
	var ve *domain.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != domain.MaxReportedIDs || ve.Fields["ids[0]"] == "" {
		t.Errorf("error %v: want %d fields from ids[0]", err, domain.MaxReportedIDs)
	}
}

func TestTargets(t *testing.T) {
	e := domain.CommandsIssued{Recipients: domain.RecipientAccounts, IDs: []int64{42, 43}}
	tests := []struct {
		recipients               domain.Recipients
		device, account, provide int64
		want                     bool
	}{
		{domain.RecipientAccounts, 1, 42, 7, true},
		{domain.RecipientAccounts, 42, 1, 7, false},
		{domain.RecipientDevices, 43, 1, 7, true},
		{domain.RecipientProviders, 1, 1, 42, true},
		{domain.RecipientProviders, 1, 42, 7, false},
		{"channels", 42, 42, 42, false},
	}
	for _, tt := range tests {
		e.Recipients = tt.recipients
		if got := e.Targets(tt.device, tt.account, tt.provide); got != tt.want {
			t.Errorf("%s %v: Targets(%d, %d, %d) = %v", tt.recipients, e.IDs, tt.device, tt.account, tt.provide, got)
		}
	}
}

func TestParseRecipients(t *testing.T) {
	for _, s := range []string{"providers", "accounts", "devices"} {
		if r, err := domain.ParseRecipients(s); err != nil || string(r) != s {
			t.Errorf("ParseRecipients(%q) = %q, %v", s, r, err)
		}
	}
	for _, s := range []string{"", "Accounts", "device", "channels"} {
		if _, err := domain.ParseRecipients(s); err == nil {
			t.Errorf("ParseRecipients(%q) accepted", s)
		}
	}
}

func TestSendStart(t *testing.T) {
	issued := domaintest.Now()
	if got := (domain.IssuedCommand{}).SendStart(issued); !got.Equal(issued) {
		t.Errorf("immediate command starts at %v", got)
	}
	at := issued.Add(time.Minute)
	if got := (domain.IssuedCommand{PostTime: at}).SendStart(issued); !got.Equal(at) {
		t.Errorf("delayed command starts at %v", got)
	}
	if got := (domain.IssuedCommand{PostTime: issued.Add(-time.Hour)}).SendStart(issued); !got.Equal(issued) {
		t.Errorf("command with a past post_time starts at %v, want when it was issued", got)
	}
}

func TestDeliveryID(t *testing.T) {
	id := domain.DeliveryID(9, 2, 77)
	if id != "9.2.77" {
		t.Fatalf("DeliveryID = %q", id)
	}
	if s, i, d, ok := domain.ParseDeliveryID(id); !ok || s != 9 || i != 2 || d != 77 {
		t.Errorf("ParseDeliveryID(%q) = %d %d %d %v", id, s, i, d, ok)
	}
	for _, bad := range []string{"", "9", "9.2", "9.2.77.1", "0.0.1", "9.16.1", "9.-1.1", "9.1.0", "a.1.2", "9.1.+2", "+9.1.2", "09.1.2", "9.01.2", " 9.1.2", "9.1.2 "} {
		if _, _, _, ok := domain.ParseDeliveryID(bad); ok {
			t.Errorf("ParseDeliveryID(%q) accepted", bad)
		}
	}
}

// FuzzParseDeliveryID parses what devices echo in ack and confirm: no
// panic, and whatever is accepted is exactly what DeliveryID writes.
func FuzzParseDeliveryID(f *testing.F) {
	for _, s := range []string{"9.2.77", "1.0.1", "9.15.1", "9.16.1", "-1.0.1", "9..1", "99999999999999999999.0.1", "+9.1.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		send, index, device, ok := domain.ParseDeliveryID(s)
		if !ok {
			return
		}
		if send <= 0 || device <= 0 || index < 0 || index >= domain.MaxSendCommands {
			t.Fatalf("ParseDeliveryID(%q) = %d %d %d", s, send, index, device)
		}
		if back := domain.DeliveryID(send, index, device); back != s {
			t.Errorf("ParseDeliveryID(%q) → DeliveryID %q", s, back)
		}
	})
}
