//! The slurm tier: srun as the launcher of agents, against a real cluster
//! (`.ci/slurm-up` starts a one-node one here). Each test skips where
//! `slurm::check` fails, and fails instead under `STACKBENCH_REQUIRE=slurm`.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use stackbench_runner::agents::slurm::{self, Launched};
use stackbench_testkit::{skip, Tier};

fn slurm_up(test: &str) -> bool {
    match slurm::check() {
        Ok(()) => true,
        Err(why) => {
            skip(Tier::Slurm, test, &why);
            false
        }
    }
}

/// The processes running `program` (by file name: slurmstepd gives tasks
/// the program's full path as argv[0]) with exactly `args`.
fn processes(program: &str, args: &[&str]) -> Vec<u32> {
    let want: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    let matches = |cmdline: Vec<u8>| {
        let mut argv = cmdline.split(|b| *b == 0).map(<[u8]>::to_vec);
        let argv0 = argv.next().unwrap_or_default();
        let rest: Vec<Vec<u8>> = argv.filter(|a| !a.is_empty()).collect();
        Path::new(std::ffi::OsStr::from_bytes(&argv0)).file_name() == Some(program.as_ref())
            && rest == want
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(matches))
        .collect()
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Each task's stdout lines as (task number, text), from `--label`'s "N: ".
fn labelled(stdout: &[u8]) -> Vec<(u32, String)> {
    let mut lines: Vec<(u32, String)> = String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| {
            let (task, text) = l
                .split_once(": ")
                .unwrap_or_else(|| panic!("unlabelled: {l}"));
            (task.trim().parse().unwrap(), text.to_string())
        })
        .collect();
    lines.sort();
    lines
}

#[test]
fn srun_runs_n_tasks_that_see_their_segment() {
    if !slurm_up("srun tasks") {
        return;
    }
    // Four tasks on whatever CPUs the node has (two here): --overcommit.
    let mut cmd = slurm::srun_command(
        4,
        Path::new("/bin/sh"),
        ["-c", "echo $SLURM_PROCID/$SLURM_NTASKS"],
    );
    let out = cmd.stdout(Stdio::piped()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let want: Vec<(u32, String)> = (0..4).map(|i| (i, format!("{i}/4"))).collect();
    assert_eq!(labelled(&out.stdout), want);
}

#[test]
fn launch_agents_runs_the_agent_command_in_each_segment() {
    use std::os::unix::fs::PermissionsExt;
    if !slurm_up("launch_agents") {
        return;
    }
    // A stand-in for the stackbench binary: each task writes what it was
    // given (its arguments, its segment and the run token from the job's
    // environment) to a file named by its rank.
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("stackbench");
    let out = dir.path().display();
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\necho \"$SLURM_PROCID/$SLURM_NTASKS $* token=$STACKBENCH_TOKEN\" \
             > {out}/seen.$SLURM_PROCID\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let token = stackbench_engine::token::Token::generate();
    let mut launched = slurm::launch_agents(&program, 3, "127.0.0.1:7700", &token).unwrap();
    assert!(launched.wait().unwrap().success());
    for i in 0..3 {
        let seen = std::fs::read_to_string(dir.path().join(format!("seen.{i}"))).unwrap();
        assert_eq!(
            seen,
            format!(
                "{i}/3 agent --controller 127.0.0.1:7700 token={}\n",
                token.to_hex()
            )
        );
    }
    assert!(!dir.path().join("seen.3").exists());
}

#[test]
fn an_agent_that_fails_leaves_the_others_running() {
    if !slurm_up("kill-on-bad-exit") {
        return;
    }
    // Task 0 fails at once; the others finish their work after it.
    let script = "if [ $SLURM_PROCID = 0 ]; then exit 3; fi; sleep 2; echo done";
    let mut cmd = slurm::srun_command(3, Path::new("/bin/sh"), ["-c", script]);
    let out = cmd.stdout(Stdio::piped()).output().unwrap();
    assert!(
        !out.status.success(),
        "srun reports the failed task: {out:?}"
    );
    assert_eq!(
        labelled(&out.stdout),
        [(1, "done".to_string()), (2, "done".to_string())]
    );
}

#[test]
fn dropping_a_launched_step_leaves_no_job_and_no_process() {
    if !slurm_up("launched drop") {
        return;
    }
    // A duration no other test uses, to find the tasks by command line.
    let (program, args) = ("sleep", ["3131"]);
    let mut cmd = slurm::srun_command(2, Path::new(program), args);
    // The cancelled step's "CANCELLED" lines are expected here.
    cmd.stderr(Stdio::null());
    let launched = Launched::spawn(cmd).unwrap();
    wait_for("both tasks running", Duration::from_secs(30), || {
        processes(program, &args).len() == 2
    });
    assert!(launched.queued(), "{} in squeue", launched.job_name());
    let (name, pid) = (launched.job_name().to_string(), launched.pid());
    drop(launched);
    let squeue = std::process::Command::new("squeue")
        .args(["-h", "-o", "%i %t", &format!("--name={name}")])
        .output()
        .unwrap();
    assert!(squeue.status.success(), "{squeue:?}");
    assert_eq!(
        String::from_utf8_lossy(&squeue.stdout),
        "",
        "job {name} gone"
    );
    assert_eq!(processes(program, &args), Vec::<u32>::new(), "no task left");
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "srun {pid} reaped"
    );
}

#[test]
fn launch_refuses_a_command_without_a_job_name() {
    // Needs no cluster: the handle could not cancel what it cannot name.
    let e = Launched::spawn(std::process::Command::new("srun")).unwrap_err();
    assert!(e.to_string().contains("--job-name"), "{e}");
}

/// Set in the child process that stands in for a controller.
const STAND_IN: &str = "STACKBENCH_SLURM_CONTROLLER_STAND_IN";

/// Not a check of its own, so ignored: run (with `--ignored`) by
/// `a_controller_killed_outright_leaves_no_job_and_no_process` in a child
/// process with `STAND_IN` set, it launches a step, prints its job name and
/// waits to be killed. Run any other way it refuses rather than wait forever.
#[test]
#[ignore = "a child process of a_controller_killed_outright_leaves_no_job_and_no_process"]
fn controller_stand_in() {
    assert!(
        std::env::var_os(STAND_IN).is_some(),
        "controller_stand_in runs only as a_controller_killed_outright_leaves_no_job_and_no_process's child"
    );
    let mut cmd = slurm::srun_command(2, Path::new("sleep"), ["3132"]);
    cmd.stderr(Stdio::null());
    let launched = Launched::spawn(cmd).unwrap();
    println!("job {}", launched.job_name());
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

#[test]
fn a_controller_killed_outright_leaves_no_job_and_no_process() {
    use std::io::BufRead;
    if !slurm_up("controller killed") {
        return;
    }
    let mut controller = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "controller_stand_in", "--ignored", "--nocapture"])
        .env(STAND_IN, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(controller.stdout.take().unwrap());
    let name = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("job ").map(String::from))
        .expect("the stand-in names its job");
    let (program, args) = ("sleep", ["3132"]);
    wait_for("both tasks running", Duration::from_secs(30), || {
        processes(program, &args).len() == 2
    });
    // SIGKILL: no Drop runs; srun's death signal and its shepherd must do.
    controller.kill().unwrap();
    controller.wait().unwrap();
    let killed = Instant::now();
    let queued = || {
        let out = std::process::Command::new("squeue")
            .args(["-h", "-o", "%i", &format!("--name={name}")])
            .output()
            .unwrap();
        !out.stdout.is_empty()
    };
    wait_for("job and tasks gone", Duration::from_secs(20), || {
        !queued() && processes(program, &args).is_empty()
    });
    eprintln!(
        "controller killed: job {name} gone after {:?}",
        killed.elapsed()
    );
}
