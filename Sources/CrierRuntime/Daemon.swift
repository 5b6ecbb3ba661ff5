import CrierAudio
import CrierCore
import CrierGPIO
import CrierLink
import CrierMusic
import CrierPosix
import CrierSpeech
import CrierSystem
import Glibc
import Synchronization

/// `crier run`: the audio engine, speech, the order link, the alert queue, buttons and status
/// prompts in one process. This actor owns the speaker policy (CrierCore's `SpeakerPolicy`:
/// the queue, the prompts and every rule of what is said next), so a component restart never
/// loses an order. It feeds the policy events and performs the effects it returns
/// (DaemonSpeaker.swift); the other files hold the link, Wi-Fi, buttons and music, status and
/// updates.
public actor Daemon {
    public let config: CrierConfig
    let hub: LogHub
    let log: Logger
    let alertLog: Logger
    /// Replaced (not repaired) when its thread stalls: a thread stuck in a driver call cannot be
    /// stopped, so a new engine takes over and the old one is abandoned.
    let engineBox: Mutex<AudioEngine>
    public nonisolated var engine: AudioEngine { engineBox.withLock { $0 } }
    /// Background music (nil: `music.source = off`); replaced, like the engine, when it stalls.
    let musicBox = Mutex<MusicPlayer?>(nil)
    public nonisolated var music: MusicPlayer? { musicBox.withLock { $0 } }
    let pipeline: SpeechPipeline
    /// The thread the actor runs on (EventThread: real-time, so an order's hop to its speech
    /// does not wait for the box's other programs).
    let events: EventThread
    public nonisolated var unownedExecutor: UnownedSerialExecutor { events.asUnownedSerialExecutor() }
    var link: (any OrderLinking)?
    /// Acks the server may not have yet, kept on the data partition across restarts.
    var ackStore: AckStore?
    /// MQTT only: orders the broker handed over and the box has not answered yet (journal).
    var inboxStore: InboxStore?
    /// The data partition's reserve: while the journals cannot be written for lack of space,
    /// no alert begins (docs/protocol.md, section 6a, "A full data partition").
    var dataReserve: DataReserve?
    /// Hands a link event from the link's thread to `handle` on the event thread (`EventThread.submit`).
    var linkEvents: (@Sendable (LinkEvent) -> Void)?
    var buttons: ButtonService?
    var buttonTask: Task<Void, Never>?

    /// Every speaker rule: the queue, the prompts, what plays, duck, music level, grace.
    var policy: SpeakerPolicy
    /// The clips the policy started: the engine's id and the speech stream, by policy token.
    var clips: [UInt64: (id: UInt64, stream: ClipStream)] = [:]
    /// When the policy wants its next tick (SpeakerWake: a stale timer never fires a later
    /// wait, a past deadline still waits `minSleep`, an unchanged deadline keeps its timer).
    var wake = SpeakerWake()
    var timer: Task<Void, Never>?
    /// What the last update turn asked for (merged into the next wake).
    var updateWake: Double?
    var graceTask: Task<Void, Never>?

    /// `audio.mixer`: the volume goes to this ALSA element instead of the software gain.
    var hardwareVolume: HardwareVolume?
    var hardwareVolumeError: String?

    var wpa: WpaControl?
    let wifiLog: Logger
    /// The health told to the server and the run record's hook (DaemonPower.swift).
    var power = DaemonPower()
    /// The setup hotspot's radio (DaemonSetup.swift; the rules are the policy's `setup`); nil
    /// with `setup.hotspot = off`.
    var setupRadio: SetupRadio?
    /// crier.conf, where a network joined from the setup hotspot is saved.
    let configPath: String?
    /// crier's runtime directory, where a crier.conf it may not write goes (LocalPage.writeConfig).
    var runtimeDir: String?

    /// Slots and update records (DaemonUpdates.swift); nil until `start`.
    var update: UpdateStatus?
    var updateFileKeys: (pending: [Int]?, outcome: [Int]?) = (nil, nil)
    /// The outcome said in this run, before its `announced=1` reached the card.
    var updateSaid: UpdateOutcome?
    let updateLog: Logger
    var remoteUpdate: RemoteUpdate?
    var failedOffers: [String: Double] = [:]
    var lastIgnoredOffer: String?
    /// When the speaker last finished saying something (the quiet time before a reboot).
    var lastSaid = 0.0

    var musicStalls = 0
    var lastSpoken: [AlertSummary] = []

    var stopping = false
    var speakerDone: CheckedContinuation<Void, Never>?
    var speakerFinished = false
    let started = Monotonic.now()

    public init(config: CrierConfig, hub: LogHub, configPath: String? = nil) {
        self.config = config
        self.configPath = configPath
        self.hub = hub
        log = hub.logger("runtime")
        alertLog = hub.logger("alert")
        events = EventThread(priority: config.speech.startPriority, log: hub.logger("runtime"))
        let engine = AudioEngine(config: AudioEngineConfig(config.audio), log: hub.logger("audio"), music: config.music)
        engineBox = Mutex(engine)
        let speech = SpeechEngine(dataPath: config.speech.dataPath, deadline: config.speech.deadline, log: hub.logger("speech"))
        pipeline = SpeechPipeline(config: config, speech: speech, log: hub.logger("speech"))
        policy = SpeakerPolicy(config: config, rate: engine.config.format.rate, now: Monotonic.now(),
                               setupName: config.setup.hotspot ? SetupNaming.name(config: config) : nil)
        if config.setup.hotspot {
            setupRadio = SetupRadio(requestPath: config.setup.requestFile, controlPath: config.wifi.controlDir + "/" + config.wifi.interface)
        }
        wifiLog = hub.logger("wifi")
        updateLog = hub.logger("update")
    }

    /// `SpeechEngine.guardCrashes`: a text that ends crier inside espeak-ng twice in a row is
    /// refused instead of ending it at every redelivery.
    nonisolated func guardSpeechCrashes(dir: String, testAbort: String?) {
        pipeline.speech.guardCrashes(dir: dir, testAbort: testAbort)
    }

    static func now() -> Double { Monotonic.now() }

    // MARK: lifecycle

    /// Starts every part; returns once the box is up (the audio device open or being retried).
    public func start() async {
        engine.start()
        pipeline.speech.keepRealtime(priority: config.speech.realtimePriority)
        startMusic()
        startUpdates()
        if let server = config.link.server {
            let events = self.events
            linkEvents = { [weak self] e in
                guard let daemon = self else { return }
                events.submit { daemon.assumeIsolated { $0.handle(e) } }
            }
            let reserve = config.ackOutboxPath.map { DataReserve(path: FileIO.directory(of: $0) + "/crier.reserve", log: hub.logger("storage")) }
            reserve?.onChange { [weak self] in Task { await self?.reserveChanged() } }
            dataReserve = reserve
            reserveChanged()
            let store = AckStore(path: config.ackOutboxPath, log: hub.logger("link"), reserve: reserve)
            // The outbox first: AlertQueue.restore only fills free room, so the outbox's acks not
            // yet confirmed (the last ones said) must be in before the inbox's (protocol §15).
            policy.restore(store.restored)  // said before the restart: acked again, not said again
            ackStore = store
            if server.isMQTT {
                let inbox = InboxStore(path: config.orderInboxPath, log: hub.logger("link"), reserve: reserve)
                policy.restore(inbox.restoredDone)  // the broker has these acks: a duplicate is acked again
                inboxStore = inbox
            }
            link = makeLink()
            link?.start()
            link?.presenceChanged(volume: config.buttons.volumeDefault)
            log.info("order link starting", ["server": server.description, "device": config.deviceID])
        } else {
            log.warning("no order server configured; set `server = tcp://HOST:PORT` in crier.conf to receive orders")
        }
        startWifi()
        try? setupRadio?.request(nil)  // a request left by an earlier run: the radio is the box's again
        // Load the voice data now: the first synthesis of a language reads its dictionaries,
        // which should not be paid by the first order.
        let warm = pipeline
        Task { _ = try? await warm.clip(Utterance(text: "。", lang: warm.config.speech.lang), rate: warm.config.audio.rate) }
        log.info("ready", ["version": CrierVersion.string, "device": config.audio.device,
                           "server": config.link.server?.description ?? "none"])
        feed(.start)
    }

    /// SIGTERM: stop taking orders, let the current alert finish (at most `grace` seconds) and
    /// send its ack, then close the device.
    public func shutdown(grace: Double = 5) async {
        guard !stopping else { return }
        stopping = true
        feed(.stop(grace: grace, deviceOpen: engine.stats.deviceOpen))
        if !speakerFinished { await withCheckedContinuation { speakerDone = $0 } }
        graceTask?.cancel()
        timer?.cancel()
        buttonTask?.cancel()
        _ = await buttonTask?.value
        wpa?.stop()
        link?.stop()  // flushes what it can of the acks already sent
        ackStore?.close()  // the undelivered ones wait in the file for the next start
        inboxStore?.close()
        dataReserve?.close()
        music?.stop()
        engine.stop()
        log.info("stopped")
    }

    /// A second SIGTERM/SIGINT while stopping: do not wait for the rest of the grace period.
    public func hurry() {
        feed(.abandon(deviceOpen: engine.stats.deviceOpen))
    }

    func reserveChanged() {
        feed(.reserveHolds(dataReserve?.holdsAlerts ?? false))
    }
}
