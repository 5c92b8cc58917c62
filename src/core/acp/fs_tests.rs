//! Unit tests of `fs` (kept apart so the module itself stays readable).
use super::*;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::AtomicBool;

#[test]
fn reads_and_writes_inside_and_refuses_outside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("work");
    std::fs::create_dir(&root).expect("mkdir");
    std::fs::write(dir.path().join("secret"), "s").expect("write");
    std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).expect("symlink");
    let scope = FsScope::new(&root);

    scope
        .write(&root.join("a.txt"), "one\ntwo\nthree\n")
        .expect("write inside");
    assert_eq!(
        scope.read(&root.join("a.txt"), None, None).expect("read"),
        "one\ntwo\nthree\n"
    );
    assert_eq!(
        scope.read(&root.join("a.txt"), Some(2), Some(1)).expect("read"),
        "two\n"
    );

    for bad in [
        dir.path().join("secret"),
        root.join("../secret"),
        root.join("link"),
        root.join("../new-file"),
    ] {
        assert!(
            matches!(
                scope.read(&bad, None, None),
                Err(FsError::Outside { .. }) | Err(FsError::Io { .. })
            ),
            "{bad:?}"
        );
        assert!(
            matches!(scope.write(&bad, "x"), Err(FsError::Outside { .. })),
            "{bad:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("secret")).expect("read"),
        "s"
    );
    assert!(!dir.path().join("new-file").exists());
    assert!(matches!(
        scope.read(Path::new("rel.txt"), None, None),
        Err(FsError::NotAbsolute(_))
    ));
}

fn exchange(a: &Path, b: &Path) {
    let (a, b) = (c_path(a).expect("path"), c_path(b).expect("path"));
    // SAFETY: both paths are valid for the call.
    unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
}

#[test]
fn a_directory_swapped_for_a_symlink_never_leads_outside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (root, outside) = (dir.path().join("work"), dir.path().join("outside"));
    std::fs::create_dir_all(root.join("real")).expect("mkdir");
    std::fs::create_dir(&outside).expect("mkdir");
    std::fs::write(root.join("real/file.txt"), "inside").expect("write");
    std::fs::write(outside.join("file.txt"), "OUTSIDE").expect("write");
    std::os::unix::fs::symlink(&outside, root.join("swap")).expect("symlink");
    let scope = FsScope::new(&root);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, a, b) = (stop.clone(), root.join("real"), root.join("swap"));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                exchange(&a, &b);
            }
        })
    };
    let (mut inside, mut escaped) = (0, 0);
    for i in 0..3000 {
        match scope.read(&root.join("real/file.txt"), None, None).as_deref() {
            Ok("inside") => inside += 1,
            Ok(_) => escaped += 1,
            Err(_) => {}
        }
        let _ = scope.write(&root.join(format!("real/w-{i}")), "x");
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("join");
    let strays: Vec<_> = std::fs::read_dir(&outside)
        .expect("read_dir")
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "file.txt")
        .collect();
    assert_eq!(escaped, 0);
    assert!(strays.is_empty(), "{strays:?}");
    assert!(inside > 0);
}

#[test]
fn only_regular_files_and_fifos_do_not_block() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("pipe");
    let c = c_path(&fifo).expect("path");
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let scope = FsScope::new(dir.path());
    assert!(matches!(
        scope.read(&fifo, None, None),
        Err(FsError::NotRegular(_))
    ));
    assert!(matches!(scope.write(&fifo, "x"), Err(FsError::NotRegular(_))));
    assert!(matches!(
        scope.read(dir.path(), None, None),
        Err(FsError::NotRegular(_))
    ));
    assert!(matches!(
        scope.write(dir.path(), "x"),
        Err(FsError::NotRegular(_))
    ));
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    assert!(matches!(
        scope.write(&dir.path().join("sub"), "x"),
        Err(FsError::NotRegular(_))
    ));
    assert!(matches!(
        scope.write(&dir.path().join("sub/.."), "x"),
        Err(FsError::NotRegular(_))
    ));
}

#[test]
fn reads_are_capped_and_lines_are_read_as_they_come() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scope = FsScope::new(dir.path());
    // A few lines, then a sparse hole far bigger than the cap: only what
    // is asked for may be read.
    let big = dir.path().join("big");
    std::fs::write(&big, "one\ntwo\nthree\nfour\n").expect("write");
    let file = std::fs::OpenOptions::new().write(true).open(&big).expect("open");
    file.set_len(4 * MAX_READ_BYTES as u64).expect("set_len");
    let err = scope.read(&big, None, None).expect_err("too large");
    assert!(err.to_string().contains(&MAX_READ_BYTES.to_string()), "{err}");
    assert_eq!(scope.read(&big, Some(2), Some(2)).expect("read"), "two\nthree\n");
    assert_eq!(scope.read(&big, None, Some(1)).expect("read"), "one\n");
    assert_eq!(scope.read(&big, Some(0), Some(1)).expect("read"), "one\n");
    // The hole is one line of NUL bytes, 6 bytes each as JSON.
    assert!(matches!(
        scope.read(&big, Some(5), None),
        Err(FsError::TooLarge { .. })
    ));
    // Under the cap in bytes, over it as JSON text.
    let controls = dir.path().join("controls");
    std::fs::write(&controls, vec![1u8; MAX_READ_BYTES / 5]).expect("write");
    assert!(matches!(
        scope.read(&controls, None, None),
        Err(FsError::TooLarge { .. })
    ));
    assert_eq!(scope.read(&big, Some(9), Some(0)).expect("read"), "");
    std::fs::write(dir.path().join("bad"), b"ok\n\xff\n").expect("write");
    assert!(matches!(
        scope.read(&dir.path().join("bad"), None, None),
        Err(FsError::NotUtf8(_))
    ));
    assert_eq!(json_len(b"a\"\\\n\x01\xc3\xa9"), 1 + 2 + 2 + 2 + 6 + 2);
}

#[test]
fn read_only_files_are_not_replaced_and_modes_are_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scope = FsScope::new(dir.path());
    let ro = dir.path().join("ro");
    std::fs::write(&ro, "keep").expect("write");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    let err = scope.write(&ro, "new").expect_err("read-only");
    assert!(
        err.to_string().to_lowercase().contains("permission denied"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&ro).expect("read"), "keep");

    let kept = dir.path().join("kept");
    std::fs::write(&kept, "old").expect("write");
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    scope.write(&kept, "new").expect("write");
    assert_eq!(std::fs::read_to_string(&kept).expect("read"), "new");
    let mode = std::fs::metadata(&kept).expect("stat").permissions().mode();
    assert_eq!(mode & 0o7777, 0o640);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read_dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn symlinks_that_stay_inside_are_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir(root.join("src")).expect("mkdir");
    std::fs::write(root.join("src/real"), "real").expect("write");
    std::os::unix::fs::symlink("src/real", root.join("alias")).expect("symlink");
    std::os::unix::fs::symlink("src/new", root.join("dangling")).expect("symlink");
    std::os::unix::fs::symlink("../../x", root.join("src/up")).expect("symlink");
    let scope = FsScope::new(root);
    assert_eq!(scope.read(&root.join("alias"), None, None).expect("read"), "real");
    scope.write(&root.join("alias"), "through").expect("write");
    assert_eq!(
        std::fs::read_to_string(root.join("src/real")).expect("read"),
        "through"
    );
    assert!(std::fs::symlink_metadata(root.join("alias"))
        .expect("lstat")
        .file_type()
        .is_symlink());
    scope.write(&root.join("dangling"), "made").expect("write");
    assert_eq!(
        std::fs::read_to_string(root.join("src/new")).expect("read"),
        "made"
    );
    assert!(matches!(
        scope.write(&root.join("src/up"), "x"),
        Err(FsError::Outside { .. })
    ));
    assert!(matches!(
        scope.read(&root.join("src/up"), None, None),
        Err(FsError::Outside { .. })
    ));
    // `..` that stays inside is fine.
    assert_eq!(
        scope.read(&root.join("src/../alias"), None, None).expect("read"),
        "through"
    );
}

#[test]
fn hard_links_to_other_users_files_are_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: giving a file to another user needs root");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("work");
    std::fs::create_dir(&root).expect("mkdir");
    let theirs = dir.path().join("theirs");
    std::fs::write(&theirs, "theirs").expect("write");
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
    std::fs::hard_link(&theirs, root.join("linked")).expect("link");
    let scope = FsScope::new(&root);
    assert!(matches!(
        scope.read(&root.join("linked"), None, None),
        Err(FsError::HardLinked(_))
    ));
    assert!(matches!(
        scope.write(&root.join("linked"), "x"),
        Err(FsError::HardLinked(_))
    ));
    // Not linked but theirs: the mode decides, for root as for anyone.
    std::fs::remove_file(root.join("linked")).expect("rm");
    std::fs::rename(&theirs, root.join("theirs")).expect("mv");
    std::fs::set_permissions(root.join("theirs"), std::fs::Permissions::from_mode(0o644)).expect("chmod");
    assert!(scope.write(&root.join("theirs"), "x").is_err());
    assert_eq!(
        scope.read(&root.join("theirs"), None, None).expect("read"),
        "theirs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_stuck_request_times_out_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a"), "a").expect("write");
    let scope = FsScope::new(dir.path());
    let started = std::time::Instant::now();
    let stuck = scope.off_runtime(dir.path(), Duration::from_millis(200), |_| {
        std::thread::sleep(Duration::from_secs(1));
        Ok(())
    });
    let read = scope.serve(
        FsRequest::Read {
            path: dir.path().join("a"),
            line: None,
            limit: None,
        },
        Duration::from_secs(5),
    );
    let (stuck, read) = tokio::join!(stuck, read);
    assert!(matches!(stuck, Err(FsError::TimedOut { .. })), "{stuck:?}");
    assert_eq!(read, Ok(serde_json::json!({"content": "a"})));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn too_many_requests_at_once_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scope = FsScope::new(dir.path());
    let release = Arc::new(AtomicBool::new(false));
    let mut held = Vec::new();
    for _ in 0..MAX_IN_FLIGHT {
        let (scope, release) = (scope.clone(), release.clone());
        let path = dir.path().to_path_buf();
        held.push(tokio::spawn(async move {
            scope
                .off_runtime(&path, Duration::from_secs(10), move |_| {
                    while !release.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Ok(())
                })
                .await
        }));
    }
    while scope.inner.in_flight.load(Ordering::Relaxed) < MAX_IN_FLIGHT {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let refused = scope.serve(
        FsRequest::Write {
            path: dir.path().join("x"),
            content: String::new(),
        },
        Duration::from_secs(5),
    );
    assert!(matches!(refused.await, Err(FsError::Busy(_))));
    release.store(true, Ordering::Relaxed);
    for h in held {
        assert_eq!(h.await.expect("join"), Ok(()));
    }
    assert_eq!(scope.inner.in_flight.load(Ordering::Relaxed), 0);
}
