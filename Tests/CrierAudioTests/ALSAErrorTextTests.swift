import CrierCore
import Testing
@testable import CrierAudio

/// ALSA's own explanation (its SNDERR text, which would otherwise go to stderr) ends up in the
/// AudioError that says what to do, once: reading it clears it.
@Suite struct ALSAErrorTextTests {
    @Test func alsasMessageGoesIntoTheErrorAndIsTakenOnce() {
        do throws(AudioError) {
            _ = try PCMDevice.open("crier_no_such_pcm", format: AudioFormat(rate: 48000, channels: 2),
                                   periodMs: 20, bufferMs: 100)
            Issue.record("a PCM that does not exist was opened")
        } catch {
            #expect(error.detail.contains("Unknown PCM crier_no_such_pcm"), "\(error.detail)")
            #expect(error.operation == "open")
        }
        #expect(ALSAErrorText.take() == "")
    }
}
