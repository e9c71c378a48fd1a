// The matvec unit's datapath as the numerics contract defines it (engine/numerics/README.md,
// matvec.hpp, exact_sum.hpp): one activation row, already quantised to integer codes and one
// power-of-two exponent per chunk of 32 columns and word, times a block-scaled weight matrix
// streamed row by row (int8 or int4 codes, E8M0 or f16 group scales), each output the window sum
// of its exact chunk terms rounded once to f32, then the bias and the epilogue (none, ReLU,
// accumulate, GELU: the correctly rounded erf GELU of rtl/gelu_pkg.sv).
//
// Per output row and chunk c (in weight group g) and word w: d = sum of weight code x activation
// code over the chunk (exact), term = d x m_g at exponent e_g + a_{w,c}. H = the place above the
// largest nonzero term's top bit; every term truncated toward zero to a multiple of 2^(H-64) and
// added exactly; the sum rounded once to f32. A NaN scale in the row or a NonFinite activation row
// makes the output 0x7FC00000.
//
// Ports, all valid/ready (a beat moves when both are high on a rising clock edge):
//   cmd  one command per activation row: chunks (padded columns / 32), chunks per scale group,
//        output rows, two words, int4 codes, f16 scales, epilogue (0 none, 1 ReLU, 2 accumulate, 3 GELU),
//        bias.
//   a    the activation row, WIDTH columns a beat: both words' codes (24-bit two's complement each)
//        and the words' exponents of the beat's chunk; `a_nonfinite` on any beat: every output NaN.
//   s    one group scale a beat, in column order (E8M0 in bits 7:0, or binary16).
//   w    the rows' code bytes as the DDR image holds them, WIDTH codes a beat (int8: WIDTH bytes;
//        int4: WIDTH / 2 bytes in the low half of w_data).
//   p    per output row: its bias (f32, used when cmd_bias) and its prior output (accumulate).
//   y    per output row: the f32 result.
// Four banks of chunk terms let the dots of one output row overlap the window sums of the previous.
// Pipeline: a weight beat's products are registered (P), their adder tree (S), then the chunk's dot
// and term (A); the window sum (B, a chunk a cycle), its rounding (r1), the bias (r2) and the
// epilogue (y) are one register each.
// Written for Stratix 10: the WIDTH x 2 products of a beat are int8 x int24 multiplies (DSP blocks),
// the terms live in block RAM; the window sum is one shifter and adder per word.
module matvec #(
    /// Weight codes a beat: 8, 16 or 32 (a chunk of 32 columns takes 32 / WIDTH beats).
    parameter int WIDTH = 32,
    /// Chunks of 32 columns a row may have (the activation and term buffers' depth).
    parameter int MAX_CHUNKS = 1024,
    /// Test-only fault: 1 truncates every rounding of the window sum instead of rounding to
    /// nearest even (tests check that the co-simulation catches it).
    parameter int BROKEN = 0
) (
    input  logic                   clk,
    input  logic                   rst_n,
    // command
    input  logic                   cmd_valid,
    output logic                   cmd_ready,
    input  logic [15:0]            cmd_chunks,
    input  logic [15:0]            cmd_group_chunks,
    input  logic [31:0]            cmd_rows,
    input  logic                   cmd_two_words,
    input  logic                   cmd_int4,
    input  logic                   cmd_f16,
    input  logic [1:0]             cmd_epilogue,
    input  logic                   cmd_bias,
    // activation codes and exponents
    input  logic                   a_valid,
    output logic                   a_ready,
    input  logic [WIDTH*24-1:0]    a_code0,
    input  logic [WIDTH*24-1:0]    a_code1,
    input  logic [15:0]            a_exp0,
    input  logic [15:0]            a_exp1,
    input  logic                   a_nonfinite,
    // group scales
    input  logic                   s_valid,
    output logic                   s_ready,
    input  logic [15:0]            s_data,
    // weight codes
    input  logic                   w_valid,
    output logic                   w_ready,
    input  logic [WIDTH*8-1:0]     w_data,
    // bias and prior output per output row
    input  logic                   p_valid,
    output logic                   p_ready,
    input  logic [31:0]            p_bias,
    input  logic [31:0]            p_prior,
    // results
    output logic                   y_valid,
    input  logic                   y_ready,
    output logic [31:0]            y_data
);
  import f32_pkg::*;
  import gelu_pkg::*;

  localparam int BEATS = 32 / WIDTH;  // beats a chunk
  localparam int BEAT_BITS = BEATS > 1 ? $clog2(BEATS) : 1;
  localparam int CHUNK_BITS = $clog2(MAX_CHUNKS);
  localparam int TERM_BITS = 52;  // |d x m| < 2^47
  localparam int ACC_BITS = 80;   // 64 window places, 2 x MAX_CHUNKS terms, sign
  localparam int NO_TOP = -32768;
  // Term banks: a row's terms fill one while B sums another; four hide the beat pipeline's two
  // stages and B's start, so rows as short as one chunk still take a beat a cycle.
  localparam int BANKS = 4;
  typedef logic [1:0] bank_t;

  initial begin
    if (WIDTH != 8 && WIDTH != 16 && WIDTH != 32) $error("matvec: WIDTH must be 8, 16 or 32");
  end

  // ---- the command --------------------------------------------------------------------------------
  typedef enum logic [1:0] {IDLE, LOAD, RUN} phase_t;
  phase_t phase;
  logic [15:0] chunks, group_chunks;
  logic [31:0] rows;
  logic two_words, int4, f16, has_bias, nonfinite;
  logic [1:0] epilogue;

  // ---- the activation row -------------------------------------------------------------------------
  logic signed [23:0] act0 [MAX_CHUNKS*32];
  logic signed [23:0] act1 [MAX_CHUNKS*32];
  logic signed [15:0] aexp0 [MAX_CHUNKS];
  logic signed [15:0] aexp1 [MAX_CHUNKS];
  logic [CHUNK_BITS-1:0] load_chunk;
  logic [BEAT_BITS-1:0] load_beat;

  // ---- stage A: dots and terms, one bank a row ----------------------------------------------------
  logic signed [TERM_BITS-1:0] term0 [BANKS][MAX_CHUNKS];
  logic signed [TERM_BITS-1:0] term1 [BANKS][MAX_CHUNKS];
  logic signed [15:0] texp0 [BANKS][MAX_CHUNKS];
  logic signed [15:0] texp1 [BANKS][MAX_CHUNKS];
  logic [BANKS-1:0] bank_full;
  logic signed [15:0] bank_top [BANKS];
  logic [BANKS-1:0] bank_nan;
  bank_t wbank;
  logic [31:0] rows_a;
  logic [CHUNK_BITS-1:0] a_chunk;
  logic [BEAT_BITS-1:0] a_beat;
  logic [15:0] a_group_chunk;
  logic signed [39:0] dot0, dot1;
  // The beat pipeline: P (the beat's products, registered), S (their adder tree, registered), then
  // A (the chunk's dot, its term and the row's window top). Each stage carries the beat's place.
  typedef struct packed {
    logic first_beat, last_beat, first_chunk, last_chunk, scale_nan;
    bank_t bank;
    logic [CHUNK_BITS-1:0] chunk;
    logic signed [12:0] m;
    logic signed [15:0] e;
  } beat_t;
  logic p_full, q_full;
  beat_t p_beat, q_beat;
  logic signed [31:0] p_prod0 [WIDTH];
  logic signed [31:0] p_prod1 [WIDTH];
  logic signed [39:0] q_part0, q_part1;
  logic signed [12:0] scale_m;
  logic signed [15:0] scale_e;
  logic row_nan;
  logic signed [15:0] row_top;

  // ---- stage B: the window sum (a chunk's terms a cycle), then rounding, bias and epilogue ---------
  // B sums a bank's terms into `acc`; the finished sum moves through four registers: r0 (the
  // sum), r1 (rounded to f32), r2 (the bias added), y (the epilogue applied), each advancing when
  // the next is free.
  logic summing;  // B is inside a row (chunk 0 was taken as it started)
  bank_t rbank;
  logic [31:0] rows_b;
  logic [CHUNK_BITS-1:0] b_chunk;
  logic signed [ACC_BITS-1:0] acc;
  logic signed [15:0] low;
  logic r0_valid, r0_nan, r0_zero, r1_valid, r2_valid, y_full;
  logic signed [ACC_BITS-1:0] r0_acc;
  logic signed [15:0] r0_low;
  logic [31:0] r1_value, r2_value, r2_prior, result;
  // The GELU epilogue's own pipeline between r2 and y: the start and GELU_STAGES steps, one register
  // each (gelu_pkg), advancing together whenever y can take a result.
  logic [GELU_STAGES:0] g_valid;
  gelu_t g_state [GELU_STAGES+1];
  logic gelu_mode, y_free;

  // ---- handshakes -----------------------------------------------------------------------------------
  logic take_scale, beat_go, last_beat, last_chunk;
  assign cmd_ready = phase == IDLE;
  assign a_ready = phase == LOAD;
  assign take_scale = a_beat == '0 && a_group_chunk == '0;
  assign beat_go = phase == RUN && rows_a != rows && !bank_full[wbank] && w_valid && (!take_scale || s_valid);
  assign w_ready = beat_go;
  assign s_ready = beat_go && take_scale;
  assign last_beat = a_beat == BEAT_BITS'(BEATS - 1);
  assign last_chunk = 16'(a_chunk) == chunks - 16'd1;
  logic y_move, r2_move, r1_move, r0_move, b_start, b_last, b_hand;
  logic [CHUNK_BITS-1:0] b_at;  // the chunk B sums this cycle
  assign y_valid = y_full;
  assign y_data = result;
  assign y_move = y_full && y_ready;
  assign gelu_mode = epilogue == 2'd3;
  assign y_free = !y_full || y_move;
  assign r2_move = r2_valid && y_free;  // r2 -> y (the epilogue), or into the GELU pipeline
  assign r1_move = r1_valid && p_valid && (!r2_valid || r2_move);  // r1 -> r2, taking the row's bias/prior
  assign p_ready = r1_move;
  assign r0_move = r0_valid && (!r1_valid || r1_move);
  assign b_start = !summing && phase == RUN && bank_full[rbank];
  assign b_last = 16'(b_at) == chunks - 16'd1;
  assign b_hand = (b_start || summing) && b_last && (!r0_valid || r0_move);  // the sum moves to r0

  // ---- the beat's products ----------------------------------------------------------------------------
  logic signed [7:0] wcode [WIDTH];
  logic [4:0] wcol [WIDTH];
  logic signed [31:0] prod0 [WIDTH];
  logic signed [31:0] prod1 [WIDTH];
  always_comb begin
    for (int i = 0; i < WIDTH; i++) begin
      if (int4) begin
        // int4: byte j of the beat holds column j (low nibble) and column j + 16 (high nibble).
        if (i < WIDTH / 2) begin
          wcode[i] = 8'(signed'(w_data[8*i+:4]));
          wcol[i] = 5'(int'(a_beat) * (WIDTH / 2) + i);
        end else begin
          wcode[i] = 8'(signed'(w_data[8*(i-WIDTH/2)+4+:4]));
          wcol[i] = 5'(16 + int'(a_beat) * (WIDTH / 2) + i - WIDTH / 2);
        end
      end else begin
        wcode[i] = signed'(w_data[8*i+:8]);
        wcol[i] = 5'(int'(a_beat) * WIDTH + i);
      end
      prod0[i] = 32'(wcode[i]) * 32'(act0[{a_chunk, wcol[i]}]);
      prod1[i] = 32'(wcode[i]) * 32'(act1[{a_chunk, wcol[i]}]);
    end
  end

  // Stage S: the adder tree over the registered products.
  logic signed [39:0] part0, part1;
  always_comb begin
    part0 = '0;
    part1 = '0;
    for (int i = 0; i < WIDTH; i++) begin
      part0 = part0 + 40'(p_prod0[i]);
      part1 = part1 + 40'(p_prod1[i]);
    end
  end

  // The scale this chunk multiplies: decoded from the scale beat at a group's first chunk, else held.
  logic signed [12:0] dec_m, cur_m;
  logic signed [15:0] dec_e, cur_e;
  logic dec_nan;
  always_comb begin
    if (f16) begin
      dec_m = s_data[14:10] == 5'd0 ? 13'(s_data[9:0]) : 13'({1'b1, s_data[9:0]});
      if (s_data[15]) dec_m = -dec_m;
      dec_e = s_data[14:10] == 5'd0 ? -16'sd24 : 16'(s_data[14:10]) - 16'sd25;
      dec_nan = s_data[14:10] == 5'h1F;
    end else begin
      dec_m = 13'sd1;
      dec_e = 16'(s_data[7:0]) - 16'sd127;
      dec_nan = s_data[7:0] == 8'hFF;
    end
    cur_m = take_scale ? dec_m : scale_m;
    cur_e = take_scale ? dec_e : scale_e;
  end

  /// |t| of a term (unsigned, the same width).
  function automatic logic [TERM_BITS-1:0] abs_term(input logic signed [TERM_BITS-1:0] t);
    return t < 0 ? -t : t;
  endfunction

  // The chunk's terms and the row's window top so far.
  logic signed [39:0] dsum0, dsum1;
  logic signed [TERM_BITS-1:0] t0, t1;
  logic signed [15:0] s0, s1, top_next;
  logic nan_next;
  always_comb begin
    nan_next = (q_beat.first_chunk && q_beat.first_beat ? 1'b0 : row_nan) || q_beat.scale_nan;
    dsum0 = (q_beat.first_beat ? 40'sd0 : dot0) + q_part0;
    dsum1 = (q_beat.first_beat ? 40'sd0 : dot1) + q_part1;
    t0 = TERM_BITS'(dsum0) * TERM_BITS'(q_beat.m);
    t1 = two_words ? TERM_BITS'(dsum1) * TERM_BITS'(q_beat.m) : '0;
    s0 = q_beat.e + aexp0[q_beat.chunk];
    s1 = q_beat.e + aexp1[q_beat.chunk];
    top_next = q_beat.first_chunk ? 16'(NO_TOP) : row_top;
    if (t0 != '0 && s0 + 16'(bit_length(MAG_BITS'(abs_term(t0)))) > top_next)
      top_next = s0 + 16'(bit_length(MAG_BITS'(abs_term(t0))));
    if (t1 != '0 && s1 + 16'(bit_length(MAG_BITS'(abs_term(t1)))) > top_next)
      top_next = s1 + 16'(bit_length(MAG_BITS'(abs_term(t1))));
  end

  // ---- stage B's placed terms ---------------------------------------------------------------------------
  function automatic logic signed [ACC_BITS-1:0] placed(input logic signed [TERM_BITS-1:0] t,
                                                        input logic signed [15:0] s,
                                                        input logic signed [15:0] l);
    logic [63:0] m, p;
    int shift;
    m = 64'(abs_term(t));
    shift = int'(s) - int'(l);
    if (shift >= 0) p = shift > 63 ? '0 : m << shift;
    else p = shift < -63 ? '0 : m >> (-shift);  // truncation toward zero
    return t < 0 ? -ACC_BITS'(p) : ACC_BITS'(p);
  endfunction

  logic signed [ACC_BITS-1:0] acc_next;
  logic signed [15:0] b_low;
  logic [31:0] rounded, biased, post;
  logic [ACC_BITS-1:0] acc_magnitude;
  always_comb begin
    // Starting a row takes its chunk 0 (the window's low end from the bank's top) in the same cycle.
    b_low = b_start ? bank_top[rbank] - 16'sd64 : low;
    b_at = b_start ? '0 : b_chunk;
    acc_next = (b_start ? ACC_BITS'(0) : acc) + placed(term0[rbank][b_at], texp0[rbank][b_at], b_low) +
               placed(term1[rbank][b_at], texp1[rbank][b_at], b_low);
    acc_magnitude = r0_acc < 0 ? -r0_acc : r0_acc;
    if (r0_nan) rounded = QNAN;
    else if (r0_zero) rounded = 32'h0;
    else rounded = round_f32(r0_acc < 0, MAG_BITS'(acc_magnitude), int'(r0_low), BROKEN != 0);
    biased = has_bias ? add_f32(r1_value, p_bias) : r1_value;
    case (epilogue)
      2'd1: post = is_nan(r2_value) ? QNAN : (!r2_value[31] && r2_value[30:0] != '0) ? r2_value : 32'h0;
      2'd2: post = add_f32(r2_prior, r2_value);
      default: post = r2_value;  // 0: none
    endcase
  end

  logic [BANKS-1:0] set_full, clear_full;
  assign set_full = q_full && q_beat.last_beat && q_beat.last_chunk ? BANKS'(1) << q_beat.bank : '0;
  assign clear_full = b_hand ? BANKS'(1) << rbank : '0;

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      phase <= IDLE;
      summing <= 1'b0;
      {r0_valid, r0_nan, r0_zero, r0_acc, r0_low, r1_valid, r1_value, y_full} <= '0;
      {r2_valid, r2_value, r2_prior} <= '0;
      g_valid <= '0;
      for (int t = 0; t <= GELU_STAGES; t++) g_state[t] <= '0;
      bank_full <= '0;
      wbank <= '0;
      rbank <= '0;
      rows_a <= '0;
      rows_b <= '0;
      a_chunk <= '0;
      a_beat <= '0;
      a_group_chunk <= '0;
      load_chunk <= '0;
      load_beat <= '0;
      nonfinite <= 1'b0;
      {chunks, group_chunks, rows, two_words, int4, f16, epilogue, has_bias} <= '0;
      {dot0, dot1, scale_m, scale_e, row_nan, row_top, b_chunk, acc, low, result} <= '0;
      {p_full, q_full, p_beat, q_beat, q_part0, q_part1} <= '0;
      for (int i = 0; i < BANKS; i++) bank_top[i] <= '0;
      bank_nan <= '0;
    end else begin
      bank_full <= (bank_full | set_full) & ~clear_full;
      // command and activation load
      if (phase == IDLE && cmd_valid) begin
        phase <= LOAD;
        chunks <= cmd_chunks;
        group_chunks <= cmd_group_chunks;
        rows <= cmd_rows;
        two_words <= cmd_two_words;
        int4 <= cmd_int4;
        f16 <= cmd_f16;
        epilogue <= cmd_epilogue;
        has_bias <= cmd_bias;
        nonfinite <= 1'b0;
        load_chunk <= '0;
        load_beat <= '0;
        rows_a <= '0;
        rows_b <= '0;
        a_chunk <= '0;
        a_beat <= '0;
        a_group_chunk <= '0;
      end
      if (phase == LOAD && a_valid) begin
        for (int i = 0; i < WIDTH; i++) begin
          act0[{load_chunk, 5'(int'(load_beat) * WIDTH + i)}] <= a_code0[24*i+:24];
          act1[{load_chunk, 5'(int'(load_beat) * WIDTH + i)}] <= a_code1[24*i+:24];
        end
        aexp0[load_chunk] <= a_exp0;
        aexp1[load_chunk] <= a_exp1;
        if (a_nonfinite) nonfinite <= 1'b1;
        if (load_beat == BEAT_BITS'(BEATS - 1)) begin
          load_beat <= '0;
          load_chunk <= load_chunk + 1'b1;
          if (16'(load_chunk) == chunks - 16'd1) phase <= RUN;
        end else begin
          load_beat <= load_beat + 1'b1;
        end
      end
      // the beat's issue: its place in the row advances, its products go to P
      p_full <= beat_go;
      if (beat_go) begin
        p_prod0 <= prod0;
        p_prod1 <= prod1;
        p_beat <= '{first_beat: a_beat == '0, last_beat: last_beat, first_chunk: a_chunk == '0,
                    last_chunk: last_chunk, bank: wbank, scale_nan: take_scale && dec_nan,
                    chunk: a_chunk, m: cur_m, e: cur_e};
        if (take_scale) begin
          scale_m <= dec_m;
          scale_e <= dec_e;
        end
        if (last_beat) begin
          a_beat <= '0;
          a_group_chunk <= a_group_chunk + 16'd1 == group_chunks ? '0 : a_group_chunk + 16'd1;
          if (last_chunk) begin
            a_chunk <= '0;
            a_group_chunk <= '0;
            wbank <= wbank + 1'b1;
            rows_a <= rows_a + 32'd1;
          end else begin
            a_chunk <= a_chunk + 1'b1;
          end
        end else begin
          a_beat <= a_beat + 1'b1;
        end
      end
      // stage S: the products' sums to Q
      q_full <= p_full;
      if (p_full) begin
        q_part0 <= part0;
        q_part1 <= part1;
        q_beat <= p_beat;
      end
      // stage A: the chunk's dot, at its last beat its term into the beat's bank
      if (q_full) begin
        dot0 <= dsum0;
        dot1 <= dsum1;
        row_nan <= nan_next;
        if (q_beat.last_beat) begin
          term0[q_beat.bank][q_beat.chunk] <= t0;
          term1[q_beat.bank][q_beat.chunk] <= t1;
          texp0[q_beat.bank][q_beat.chunk] <= s0;
          texp1[q_beat.bank][q_beat.chunk] <= s1;
          row_top <= top_next;
          if (q_beat.last_chunk) begin
            bank_top[q_beat.bank] <= top_next;
            bank_nan[q_beat.bank] <= nonfinite || nan_next;
          end
        end
      end
      // stage B: the sum
      if (b_start || summing) begin
        if (b_last) begin
          if (b_hand) begin
            r0_acc <= acc_next;
            r0_low <= b_low;
            r0_nan <= bank_nan[rbank];
            r0_zero <= bank_top[rbank] == 16'(NO_TOP);
            rbank <= rbank + 1'b1;
            summing <= 1'b0;
          end else if (b_start) begin  // r0 is busy: hold chunk 0's sum and wait
            acc <= '0;
            low <= b_low;
            b_chunk <= '0;
            summing <= 1'b1;
          end
        end else begin
          acc <= acc_next;
          low <= b_low;
          b_chunk <= b_at + 1'b1;
          summing <= 1'b1;
        end
      end
      // stage B: rounding, bias and epilogue, the result
      if (b_hand) r0_valid <= 1'b1;
      else if (r0_move) r0_valid <= 1'b0;
      if (r0_move) begin
        r1_value <= rounded;
        r1_valid <= 1'b1;
      end else if (r1_move) begin
        r1_valid <= 1'b0;
      end
      if (r1_move) begin
        r2_value <= biased;
        r2_prior <= p_prior;
        r2_valid <= 1'b1;
      end else if (r2_move) begin
        r2_valid <= 1'b0;
      end
      if (gelu_mode) begin
        if (y_free) begin
          g_valid <= {g_valid[GELU_STAGES-1:0], r2_valid};
          g_state[0] <= gelu_start(r2_value);
          for (int t = 1; t <= GELU_STAGES; t++) g_state[t] <= gelu_stage(t, g_state[t-1]);
          result <= gelu_finish(g_state[GELU_STAGES]);
          y_full <= g_valid[GELU_STAGES];
        end
      end else if (r2_move) begin
        result <= post;
        y_full <= 1'b1;
      end else if (y_move) begin
        y_full <= 1'b0;
      end
      if (y_move) begin
        rows_b <= rows_b + 32'd1;
        if (rows_b + 32'd1 == rows) phase <= IDLE;
      end
    end
  end

endmodule
