//! The permission subjects: a deny pattern sees every command the line runs, or the
//! subjects say they are incomplete (and then deny patterns refuse the call). One test per
//! class of the red team's bypasses, each with other spellings of the same class.

use super::judge;
use core_models::PermissionSubjects;
use globset::Glob;

fn subjects(command: &str) -> PermissionSubjects {
    judge(command, None, None).subjects
}

/// Whether the deny pattern `rm *` matches a subject or deny-only form of `command`.
fn rm_matches(command: &str) -> bool {
    let m = Glob::new("rm *")
        .unwrap_or_else(|e| panic!("{e}"))
        .compile_matcher();
    subjects(command).for_deny().any(|s| m.is_match(s))
}

/// `command` shows `rm …` as a subject and still sees everything it runs.
fn seen(command: &str) {
    let s = subjects(command);
    assert!(rm_matches(command), "{command:?}: {s:?}");
    assert!(s.complete, "{command:?} should be complete: {s:?}");
}

/// `command` admits that it runs what the judge cannot see.
fn unseen(command: &str) {
    let s = subjects(command);
    assert!(!s.complete, "{command:?} should be incomplete: {s:?}");
}

#[test]
fn a_program_given_by_its_path_is_also_its_name() {
    seen("/bin/rm v2");
    seen("/usr/bin/rm -f v2");
    seen("env /bin/rm v2");
    assert_eq!(
        subjects("/bin/rm v2").subjects,
        ["/bin/rm v2", "rm v2"],
        "the name form is added"
    );
    // A path elsewhere may be a script the model wrote.
    for command in [
        "./rm v",
        "bin/tool x",
        "/tmp/x.sh",
        "/usr/bin/../../tmp/x",
        "../x",
    ] {
        unseen(command);
    }
    assert!(rm_matches("./rm v"));
}

#[test]
fn env_split_string_is_followed() {
    seen("env -S'rm v5'");
    seen("env -S 'rm v5'");
    seen("env -iS 'rm v5'");
    seen("env --split-string='rm v6'");
    seen("env -S 'rm' v5");
    seen("env -S '-i rm v5'");
    seen("env -S \"rm 'v 5'\"");
    // Abbreviations and what env expands itself are not understood.
    unseen("env --split-str='rm v6'");
    unseen("env --split='rm v6'");
    unseen("env -S 'rm ${X}'");
    unseen("env -S 'rm\\_v'");
}

#[test]
fn wrapper_options_are_read_from_their_tables() {
    for command in [
        "timeout -s KILL 5 rm v8",
        "timeout --signal KILL 5 rm v8",
        "timeout --signal=KILL -k 1 5 rm v8",
        "nice -n 5 rm v9",
        "nice --adjustment 5 rm v9",
        "nice -5 rm v9",
        "stdbuf -o 0 rm v24",
        "stdbuf --output 0 rm v24",
        "ionice -c 3 rm v",
        "chrt -r 5 rm v",
        "taskset -c 1 rm v",
        "setsid -f rm v",
        "flock -w 1 lock rm v",
        "flock lock -c 'rm v'",
        "sudo -u me rm v",
        "doas -u me rm v",
        "command -p rm v",
        "exec rm v",
        "watch -n 1 rm v",
        "find . -name '*.o' -exec rm {} +",
        "xargs rm",
        "xargs -0 -n 1 rm -f",
        "xargs --max-args=1 rm",
        "xargs -I F rm F",
        "time -p rm v",
        "busybox rm v",
        "nohup rm v",
    ] {
        seen(command);
    }
    assert_eq!(subjects("xargs rm").subjects, ["xargs rm", "rm {}"]);
}

#[test]
fn wrapper_options_not_understood_leave_the_command_unknown() {
    for command in [
        "echo v7 | xargs --max-a 1 rm",
        "timeout --sig KILL 5 rm v8",
        "nice --adj 5 rm v9",
        "stdbuf --out 0 rm v24",
        "timeout -Z 5 rm v",
        "sudo --user=me --frobnicate rm v",
        "xargs -I X X v",
        "find . -exec {} ;",
        "setarch x86_64 rm v",
        "eatmydata rm v",
        "strace -f rm v",
        "parallel rm ::: v",
    ] {
        unseen(command);
    }
    // The deny-list and deny patterns still see the guesses.
    assert!(rm_matches("timeout --sig KILL 5 rm v8"));
    assert_eq!(
        judge("timeout --sig KILL 5 rm v8", None, None).risk,
        core_models::RiskLevel::High
    );
}

#[test]
fn a_word_the_judge_cannot_read_where_it_decides_what_runs() {
    for command in [
        "timeout $S KILL 5 rm v",
        "env $OPTS rm v",
        "find . $X",
        "xargs $A rm",
        "git $CMD",
        "sed \"$S\" f",
        "printf $F",
    ] {
        unseen(command);
    }
    seen("env rm \"$X\"");
    assert!(subjects("printf '%s' \"$x\"").complete);
}

#[test]
fn scripts_of_trap_eval_and_shells_are_followed() {
    seen("trap 'rm v10' EXIT");
    seen("trap -- 'rm v10' INT TERM");
    seen("eval 'rm v'");
    seen("eval rm v");
    seen("sh -c 'rm v'");
    seen("bash -xc 'rm v'");
    seen("busybox sh -c 'rm v'");
    seen("su -c 'rm v' me");
    unseen("eval \"$x\"");
    unseen("trap \"$x\" EXIT");
    unseen("sh -c \"$x\"");
    assert!(subjects("trap - EXIT").complete);
}

#[test]
fn aliases_are_not_seen_where_they_are_used() {
    unseen("alias r=rm\nr v11");
    unseen("alias r='rm v11'; r");
    assert!(rm_matches("alias r='rm v11'"));
}

#[test]
fn shells_and_interpreters_reading_files_or_input_are_unseen() {
    for command in [
        "sh <<EOF\nrm v12\nEOF",
        "echo 'rm v13' | sh",
        "bash < x.sh",
        "sh x.sh",
        "bash -s",
        "bash -i -c ls",
        "bash --rcfile r -c ls",
        "zsh -c 'rm v'",
        "python3 x.py",
        "python3 -c 'import os; os.system(\"rm v\")'",
        "perl -e 'system q(rm v)'",
        "awk 'BEGIN{system(\"rm v\")}'",
        "make",
        ". ./x.sh",
        "source x.sh",
        "exec 3< x",
        "exec > out",
        "npm run x",
        "yarn build",
    ] {
        unseen(command);
    }
    assert!(subjects("cargo test && cargo build").complete);
}

#[test]
fn git_configuration_and_aliases_are_unseen() {
    unseen("git -c alias.x='!rm v14' x");
    assert!(rm_matches("git -c alias.x='!rm v14' x"));
    for command in [
        "git -c core.pager='rm v' log",
        "git --config-env=core.pager=P log",
        "git --exec-path=. log",
        "git lg",
        "git config core.fsmonitor 'rm v'",
        "git config alias.x '!rm v'",
        "git config include.path x",
        "git difftool",
        "git diff --ext-diff",
        "git log --format=%GG",
    ] {
        unseen(command);
    }
    seen("git bisect run rm v");
    seen("git rebase --exec 'rm v' main");
    assert!(subjects("git -C src log --oneline").complete);
}

#[test]
fn sed_e_commands_are_followed() {
    seen("sed -n '1e rm v15' v16");
    seen("sed -e p -e '$e rm v' f");
    for command in [
        "sed -n 1e f",
        "sed 's/x/rm v/e' f",
        "sed -f s.sed f",
        "sed --expr='1e rm v' f",
    ] {
        unseen(command);
    }
    assert!(subjects("sed --sandbox -n 1p f").complete);
}

#[test]
fn options_that_run_commands_are_unseen() {
    unseen("tar -cf a.tar --checkpoint=1 --checkpoint-action=exec='rm v17' x");
    assert!(rm_matches(
        "tar -cf a.tar --checkpoint=1 --checkpoint-action=exec='rm v17' x"
    ));
    for command in [
        "tar -xf a.tar --to-command='rm v'",
        "tar --to-c='rm v' -xf a.tar",
        "tar xIf 'rm v' a.tar",
        "tar -cf host:a.tar .",
        "rsync -e 'rm v' a b:c",
        "rsync --rsh='rm v' a b",
        "sort --compress-program=rm f",
        "rg --pre rm x",
        "ssh host rm v",
    ] {
        unseen(command);
    }
    assert!(subjects("tar -czf a.tgz src").complete);
}

#[test]
fn substitutions_and_expansions_as_program_names_are_unseen() {
    unseen("$(echo rm) v18");
    unseen("rm${IFS}v19");
    unseen("`echo rm` v");
    unseen("\"$X\" v");
}

#[test]
fn variables_that_change_what_runs_are_unseen() {
    for command in [
        "PATH=. ls",
        "PATH=.; ls",
        "export PATH=.",
        "LD_PRELOAD=./x.so ls",
        "BASH_ENV=x bash -c ls",
        "GIT_EXTERNAL_DIFF=x git diff",
        "env PATH=. ls",
        "sudo PATH=. ls",
        "read PATH < f",
        "printf -v PATH .",
        "hash -p /bin/rm ls",
        "declare -n r=PATH",
    ] {
        unseen(command);
    }
    assert!(subjects("LANG=C ls").complete);
    assert!(subjects("x=1; echo ok").complete);
    assert!(subjects("export LC_ALL=C").complete);
}

#[test]
fn guesses_are_bounded() {
    let chain = format!("{}ls", "nice --a ".repeat(200));
    let inner = format!("{}ls", "nice --a sh -c ".repeat(4));
    let scripts = format!("nice --a {}", format!("sh -c '{inner}' ").repeat(50));
    let start = std::time::Instant::now();
    for line in [&chain, &scripts] {
        let j = judge(line, None, None);
        assert!(!j.subjects.complete);
        assert!(
            j.subjects.subjects.len() < 2_000,
            "{}",
            j.subjects.subjects.len()
        );
    }
    let elapsed = start.elapsed();
    assert!(elapsed.as_secs_f64() < 2.0, "took {elapsed:?}");
}

#[test]
fn values_the_shell_evaluates_as_code_are_unseen() {
    // bash evaluates a variable read in arithmetic, and the command substitutions of an
    // array subscript in its value run: `x='a[$(rm v)]'; echo $((x))`.
    for command in [
        "x='a[$(rm v)]'; echo $((x))",
        "x='a[$(rm v)]'; echo $(( $x + 1 ))",
        "x='a[$(rm v)]'; echo ${b[x]}",
        "x='a[$(rm v)]'; echo ${!x}",
        "x='$(rm v)'; echo \"${x@P}\"",
        "x='a[$(rm v)]'; echo ${y:x}",
        "x='a[$(rm v)]'; (( x ))",
        "x='a[$(rm v)]'; let n=x",
        "x='a[$(rm v)]'; declare -i n=x",
        "for ((i = 0; i < n; i++)); do :; done",
    ] {
        unseen(command);
    }
    for command in ["echo $((1 + 2))", "echo ${x:-y}", "echo \"${#x}\""] {
        assert!(subjects(command).complete, "{command:?}");
    }
}
