package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"tvsm/eventstore/sealed"
	"tvsm/internal/wiring/node"
)

// offlineCommand parses `tvsm GROUP VERB --data DIR [--master-key-file
// FILE] ...`, a command on a stopped node's data directory (keys rotate,
// store encrypt): define adds the command's own flags. It returns the data
// directory and the master key (DIR.master-key unless given).
func offlineCommand(group, verb, usage string, args []string, stderr io.Writer, define func(fs *flag.FlagSet)) (string, *sealed.MasterKey, error) {
	if len(args) == 0 || args[0] != verb {
		fmt.Fprint(stderr, usage)
		return "", nil, &configError{fmt.Errorf("the command is tvsm %s %s", group, verb)}
	}
	fs := flag.NewFlagSet(group+" "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	data := fs.String("data", "", "the stopped node's data `directory`")
	keyFile := fs.String("master-key-file", "", "the master key `file` (default DIR.master-key)")
	define(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return "", nil, err
	}
	switch {
	case fs.NArg() > 0:
		return "", nil, &configError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	case *data == "":
		return "", nil, &configError{errors.New("--data is required")}
	}
	if *keyFile == "" {
		*keyFile = node.DefaultMasterKeyFile(*data)
	}
	master, err := sealed.LoadMasterKey(*keyFile)
	return *data, master, err
}
